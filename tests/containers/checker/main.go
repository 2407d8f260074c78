// Command checker validates the container files offline, with the libraries
// Docker itself uses, and prints what they computed as JSON for
// check_policy.py:
//
//	checker dockerfile Dockerfile        BuildKit's parser, linter (the rules of
//	                                     `docker build --check`) and LLB
//	                                     conversion; the final image config
//	checker context DIR [PATH...]        the build context of DIR under its
//	                                     .dockerignore, read and matched by
//	                                     the docker CLI's own packages; and
//	                                     whether each PATH would stay out
//	checker compose docker-compose.yml [PROFILE...]
//	                                     compose-go's loader (what `docker
//	                                     compose config` runs): schema,
//	                                     interpolation, normalisation; the
//	                                     env files are not read
//
// No registry is contacted: base images resolve to a stub config, so nothing
// about the base images themselves is checked here.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerui"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	digest "github.com/opencontainers/go-digest"
)

func main() {
	if len(os.Args) < 3 {
		fail("usage: checker dockerfile PATH | checker context DIR [PATH...] | checker compose PATH [PROFILE...]")
	}
	var out any
	var err error
	switch os.Args[1] {
	case "dockerfile":
		out, err = checkDockerfile(os.Args[2])
	case "context":
		out, err = buildContext(os.Args[2], os.Args[3:])
	case "compose":
		out, err = loadCompose(os.Args[2], os.Args[3:])
	default:
		fail("unknown subcommand " + os.Args[1])
	}
	if err != nil {
		fail(err.Error())
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "checker:", msg)
	os.Exit(1)
}

// offlineResolver answers every base image with an empty linux/amd64 config.
type offlineResolver struct{}

func (offlineResolver) ResolveImageConfig(_ context.Context, ref string, _ sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	dgst := digest.Digest("")
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		dgst = digest.Digest(ref[i+1:])
	}
	cfg := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]},"config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}}`)
	return ref, dgst, cfg, nil
}

type lintWarning struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
	Line   int32  `json:"line"`
}

type copyInfo struct {
	From     string    `json:"from"`
	Sources  []string  `json:"sources"`
	Heredocs []heredoc `json:"heredocs"`
	Dest     string    `json:"dest"`
	Chown    string    `json:"chown"`
	Chmod    string    `json:"chmod"`
	Line     int       `json:"line"`
}

type heredoc struct {
	Name   string `json:"name"`
	Data   string `json:"data"`
	Expand bool   `json:"expand"`
}

type mountInfo struct {
	Type   string `json:"type"`
	Target string `json:"target"`
	ID     string `json:"id"`
	Source string `json:"source"`
}

type runInfo struct {
	Command string      `json:"command"`
	Mounts  []mountInfo `json:"mounts"`
	Line    int         `json:"line"`
}

type kv struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
	Line  int     `json:"line"`
}

type stageInfo struct {
	Name   string     `json:"name"`
	Base   string     `json:"base"`
	Copies []copyInfo `json:"copies"`
	Runs   []runInfo  `json:"runs"`
	Args   []kv       `json:"args"`
	Envs   []kv       `json:"envs"`
	Users  []string   `json:"users"`
}

type dockerfileReport struct {
	Syntax     string         `json:"syntax"`
	Warnings   []lintWarning  `json:"lint_warnings"`
	LintError  string         `json:"lint_error"`
	GlobalArgs []kv           `json:"global_args"`
	Stages     []stageInfo    `json:"stages"`
	Image      map[string]any `json:"image"`
	LLBOps     int            `json:"llb_ops"`
}

func line(r []parser.Range) int {
	if len(r) == 0 {
		return 0
	}
	return r[0].Start.Line
}

func checkDockerfile(path string) (*dockerfileReport, error) {
	dt, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rep := &dockerfileReport{}
	rep.Syntax, _, _, _ = parser.ParseDirective("syntax", dt)

	// The linter: every rule `docker build --check` runs, over all stages.
	sm := llb.NewSourceMap(nil, filepath.Base(path), "Dockerfile", dt)
	sm.Definition = &llb.Definition{}
	ctx := context.Background()
	lint, err := dockerfile2llb.DockerfileLint(ctx, dt, dockerfile2llb.ConvertOpt{
		Config: dockerui.Config{}, SourceMap: sm, MetaResolver: offlineResolver{},
	})
	if err != nil {
		return nil, err
	}
	for _, w := range lint.Warnings {
		var ln int32
		if len(w.Location.Ranges) > 0 {
			ln = w.Location.Ranges[0].Start.Line
		}
		rep.Warnings = append(rep.Warnings, lintWarning{Rule: w.RuleName, Detail: w.Detail, Line: ln})
	}
	if lint.Error != nil {
		rep.LintError = lint.Error.Message
	}

	// The instructions, as the frontend parses them.
	res, err := parser.Parse(bytes.NewReader(dt))
	if err != nil {
		return nil, err
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, err
	}
	for _, a := range metaArgs {
		for _, p := range a.Args {
			rep.GlobalArgs = append(rep.GlobalArgs, kv{Key: p.Key, Value: p.Value, Line: line(a.Location())})
		}
	}
	for _, st := range stages {
		si := stageInfo{Name: st.Name, Base: st.BaseName}
		for _, c := range st.Commands {
			switch c := c.(type) {
			case *instructions.CopyCommand:
				ci := copyInfo{From: c.From, Sources: c.SourcePaths, Dest: c.DestPath, Chown: c.Chown, Chmod: c.Chmod, Line: line(c.Location())}
				for _, sc := range c.SourceContents {
					ci.Heredocs = append(ci.Heredocs, heredoc{Name: sc.Path, Data: sc.Data, Expand: sc.Expand})
				}
				si.Copies = append(si.Copies, ci)
			case *instructions.RunCommand:
				ri := runInfo{Command: strings.Join(c.CmdLine, " "), Line: line(c.Location())}
				// Parses the --mount flags; variables stay as written.
				if err := c.Expand(func(word string) (string, error) { return word, nil }); err != nil {
					return nil, fmt.Errorf("line %d: %w", ri.Line, err)
				}
				for _, m := range instructions.GetMounts(c) {
					ri.Mounts = append(ri.Mounts, mountInfo{Type: string(m.Type), Target: m.Target, ID: m.CacheID, Source: m.Source})
				}
				si.Runs = append(si.Runs, ri)
			case *instructions.ArgCommand:
				for _, p := range c.Args {
					si.Args = append(si.Args, kv{Key: p.Key, Value: p.Value, Line: line(c.Location())})
				}
			case *instructions.EnvCommand:
				for _, p := range c.Env {
					v := p.Value
					si.Envs = append(si.Envs, kv{Key: p.Key, Value: &v, Line: line(c.Location())})
				}
			case *instructions.UserCommand:
				si.Users = append(si.Users, c.User)
			}
		}
		rep.Stages = append(rep.Stages, si)
	}

	// The whole conversion to LLB for the default (last) stage: mounts,
	// heredocs, COPY flags and stage references must all be valid. Its image
	// config is what `docker inspect` would show.
	conv, err := dockerfile2llb.Dockerfile2LLB(ctx, dt, dockerfile2llb.ConvertOpt{
		Config: dockerui.Config{}, MetaResolver: offlineResolver{},
	})
	if err != nil {
		return nil, fmt.Errorf("LLB conversion: %w", err)
	}
	def, err := conv.State.Marshal(ctx)
	if err != nil {
		return nil, fmt.Errorf("LLB marshal: %w", err)
	}
	rep.LLBOps = len(def.Def)
	cfg := conv.Image.Config
	rep.Image = map[string]any{
		"user":          cfg.User,
		"env":           cfg.Env,
		"entrypoint":    cfg.Entrypoint,
		"cmd":           cfg.Cmd,
		"working_dir":   cfg.WorkingDir,
		"volumes":       cfg.Volumes,
		"exposed_ports": cfg.ExposedPorts,
		"labels":        cfg.Labels,
		"stop_signal":   cfg.StopSignal,
		"healthcheck":   cfg.Healthcheck,
	}
	return rep, nil
}

func loadCompose(path string, profiles []string) (any, error) {
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithProfiles(profiles),
		cli.WithName("aegis"),
		// The env files are the gateway's secrets: never read them here.
		cli.WithoutEnvironmentResolution,
	)
	if err != nil {
		return nil, err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return nil, err
	}
	raw, err := project.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	disabled := []string{}
	for name := range project.DisabledServices {
		disabled = append(disabled, name)
	}
	out["x-disabled-services"] = disabled
	return out, nil
}

type contextReport struct {
	Files   []string        `json:"files"`
	Ignored map[string]bool `json:"ignored"`
}

// buildContext lists the files of root that .dockerignore lets into the
// build context, matching as the docker CLI does (ignorefile.ReadAll, then
// patternmatcher's MatchesOrParentMatches on each path).
func buildContext(root string, probes []string) (*contextReport, error) {
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, err
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, err
	}
	rep := &contextReport{Files: []string{}, Ignored: map[string]bool{}}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		excluded, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if excluded && !mayReinclude(pm, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !excluded {
			rep.Files = append(rep.Files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range probes {
		excluded, err := pm.MatchesOrParentMatches(p)
		if err != nil {
			return nil, err
		}
		rep.Ignored[p] = excluded
	}
	return rep, nil
}

// mayReinclude reports whether an exception (`!`) pattern could bring back
// something below the excluded directory dir, so the walk must go in.
func mayReinclude(pm *patternmatcher.PatternMatcher, dir string) bool {
	for _, p := range pm.Patterns() {
		if !p.Exclusion() {
			continue
		}
		text := p.String()
		literal := text
		if i := strings.IndexAny(text, `*?[\`); i >= 0 {
			literal = text[:i]
		}
		if literal == "" || strings.HasPrefix(literal, dir+"/") || strings.HasPrefix(dir+"/", literal) {
			return true
		}
	}
	return false
}
