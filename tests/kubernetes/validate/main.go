// Command validate reads the manifests `helm template` renders for the
// aegis-gitea-mcp chart and does two things with them.
//
//	validate check FILE...
//	    Decodes every document strictly into its Kubernetes API type
//	    (k8s.io/api, and the Prometheus Operator's ServiceMonitor), with
//	    apimachinery's own strict YAML serializer, as an API server with
//	    strict field validation does: an unknown or duplicated field, a
//	    field in the wrong case or of the wrong type, and a kind that is
//	    not registered (an unknown apiVersion/kind) are errors. Then checks
//	    what ties the objects together: selectors that select the pods,
//	    port names that exist, the ConfigMap and Secret references, the
//	    probes' Host header. Prints one line per document.
//
//	validate json FILE
//	    The same strict decoding, then the documents as one JSON array (for
//	    tests/kubernetes/policy.py, which needs no YAML library).
//
//	validate values FILE...
//	    Helm values files merged as Helm merges them (later files win, maps
//	    merge key by key, a null removes a key), printed as JSON.
//
//	validate kube-play -out DIR FILE
//	    Writes what `podman kube play` (4.3) runs in place of a cluster, and
//	    prints each change it made (docs/kubernetes.md, "What CI runs and
//	    what differs from a cluster"):
//	      DIR/gateway.yaml   the ConfigMap, the PersistentVolumeClaim and the
//	                         Deployment, with hostPort 8080 on 127.0.0.1 for
//	                         the http port and the probes removed (the
//	                         harness probes as a kubelet would: podman would
//	                         turn the liveness probe into a `curl` health
//	                         check inside an image that has no curl);
//	      DIR/job-NAME.yaml  each Job's pod template as a Pod (podman 4.3
//	                         has no Job), restartPolicy Never;
//	      DIR/probes.json    the gateway's probes, the grace period and the
//	                         names of the kinds left out (Service, Ingress,
//	                         PodDisruptionBudget, ServiceMonitor,
//	                         NetworkPolicy, ServiceAccount: podman has no
//	                         use for them).
//
// Exit 0 when everything passed, 1 otherwise (each failure on stderr).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "check":
		err = check(os.Args[2:])
	case "kube-play":
		err = kubePlay(os.Args[2:])
	case "json":
		err = toJSON(os.Args[2:])
	case "values":
		err = mergeValues(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "validate:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: validate check FILE... | validate json FILE | validate values FILE... | validate kube-play -out DIR FILE")
	os.Exit(2)
}

// The kinds a chart may render, and nothing else: a document of any other
// group, version or kind fails to decode ("no kind is registered").
func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		batchv1.AddToScheme,
		networkingv1.AddToScheme,
		policyv1.AddToScheme,
		monitoringv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return scheme
}

type document struct {
	source string // file:index
	obj    runtime.Object
	gvk    schema.GroupVersionKind
	meta   metav1.Object
}

// decodeFile splits a multi-document YAML file and decodes each non-empty
// document strictly.
func decodeFile(path string) ([]document, []error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, []error{err}
	}
	scheme := newScheme()
	strict := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs []document
	var errs []error
	for i := 0; ; i++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", path, i, err))
			break
		}
		if isEmptyDocument(chunk) {
			continue
		}
		source := fmt.Sprintf("%s#%d", filepath.Base(path), i)
		obj, gvk, err := strict.Decode(chunk, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", source, err))
			continue
		}
		meta, ok := obj.(metav1.Object)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s has no object metadata", source, gvk))
			continue
		}
		docs = append(docs, document{source: source, obj: obj, gvk: *gvk, meta: meta})
	}
	return docs, errs
}

func isEmptyDocument(chunk []byte) bool {
	for _, line := range strings.Split(string(chunk), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && line != "---" {
			return false
		}
	}
	return true
}

func check(files []string) error {
	if len(files) == 0 {
		return errors.New("check: no file")
	}
	failures := 0
	for _, path := range files {
		docs, errs := decodeFile(path)
		for _, err := range errs {
			failures++
			fmt.Fprintln(os.Stderr, "FAIL", err)
		}
		for _, d := range docs {
			fmt.Printf("ok   %-32s %s/%s (strict)\n", d.source, d.gvk.Kind, d.meta.GetName())
		}
		if len(docs) == 0 && len(errs) == 0 {
			failures++
			fmt.Fprintf(os.Stderr, "FAIL %s: no document\n", path)
			continue
		}
		for _, problem := range crossCheck(docs) {
			failures++
			fmt.Fprintf(os.Stderr, "FAIL %s: %s\n", filepath.Base(path), problem)
		}
	}
	if failures > 0 {
		return fmt.Errorf("%d failure(s)", failures)
	}
	return nil
}

// crossCheck: what no single type can check.
func crossCheck(docs []document) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	names := map[string]bool{}
	configMaps := map[string]bool{}
	var pods []podOf
	var services []*corev1.Service
	for _, d := range docs {
		key := d.gvk.Kind + "/" + d.meta.GetName()
		if names[key] {
			add("%s twice", key)
		}
		names[key] = true
		switch o := d.obj.(type) {
		case *corev1.ConfigMap:
			configMaps[o.Name] = true
		case *corev1.Service:
			services = append(services, o)
		case *appsv1.Deployment:
			pods = append(pods, podOf{owner: key, labels: o.Spec.Template.Labels, spec: &o.Spec.Template.Spec})
			selector, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
			if err != nil || !selector.Matches(labels.Set(o.Spec.Template.Labels)) {
				add("%s: the selector does not select its own pod template", key)
			}
		case *batchv1.Job:
			pods = append(pods, podOf{owner: key, labels: o.Spec.Template.Labels, spec: &o.Spec.Template.Spec, job: true})
		}
	}
	gateways := 0
	for _, p := range pods {
		if !p.job {
			gateways++
		}
		for _, c := range append(append([]corev1.Container{}, p.spec.InitContainers...), p.spec.Containers...) {
			for _, from := range c.EnvFrom {
				if from.ConfigMapRef != nil && !configMaps[from.ConfigMapRef.Name] {
					add("%s: container %s reads the ConfigMap %s, which the chart does not render", p.owner, c.Name, from.ConfigMapRef.Name)
				}
			}
			for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if probe == nil || probe.HTTPGet == nil {
					continue
				}
				if probe.HTTPGet.Port.Type == 1 && !hasPort(c, probe.HTTPGet.Port.StrVal) {
					add("%s: a probe names the port %q, which container %s does not have", p.owner, probe.HTTPGet.Port.StrVal, c.Name)
				}
				host := ""
				for _, h := range probe.HTTPGet.HTTPHeaders {
					if strings.EqualFold(h.Name, "Host") {
						host = h.Value
					}
				}
				if host != "localhost" {
					add("%s: a probe of %s without the header Host: localhost gets 421 from the gateway", p.owner, probe.HTTPGet.Path)
				}
			}
		}
	}
	for _, svc := range services {
		matched := 0
		for _, p := range pods {
			if p.job {
				if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.labels)) {
					add("Service/%s selects the pods of %s", svc.Name, p.owner)
				}
				continue
			}
			if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.labels)) {
				matched++
				for _, port := range svc.Spec.Ports {
					if port.TargetPort.Type == 1 && !podHasPort(p.spec, port.TargetPort.StrVal) {
						add("Service/%s: targetPort %q is no port of %s", svc.Name, port.TargetPort.StrVal, p.owner)
					}
				}
			}
		}
		if matched == 0 {
			add("Service/%s selects no pod template", svc.Name)
		}
	}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *policyv1.PodDisruptionBudget:
			if !selectsGateway(o.Spec.Selector, pods) {
				add("PodDisruptionBudget/%s selects no gateway pod", o.Name)
			}
		case *networkingv1.NetworkPolicy:
			if !selectsGateway(&o.Spec.PodSelector, pods) {
				add("NetworkPolicy/%s selects no gateway pod", o.Name)
			}
		case *monitoringv1.ServiceMonitor:
			ok := false
			for _, svc := range services {
				sel, err := metav1.LabelSelectorAsSelector(&o.Spec.Selector)
				if err == nil && sel.Matches(labels.Set(svc.Labels)) {
					for _, ep := range o.Spec.Endpoints {
						for _, port := range svc.Spec.Ports {
							if port.Name == ep.Port {
								ok = true
							}
						}
					}
				}
			}
			if !ok {
				add("ServiceMonitor/%s: no Service with its labels has its endpoint's port", o.Name)
			}
		case *networkingv1.Ingress:
			for _, rule := range o.Spec.Rules {
				if rule.HTTP == nil {
					continue
				}
				for _, path := range rule.HTTP.Paths {
					if path.Backend.Service == nil {
						continue
					}
					found := false
					for _, svc := range services {
						if svc.Name == path.Backend.Service.Name {
							for _, port := range svc.Spec.Ports {
								if port.Name == path.Backend.Service.Port.Name || port.Port == path.Backend.Service.Port.Number {
									found = true
								}
							}
						}
					}
					if !found {
						add("Ingress/%s: the backend %s is no Service port here", o.Name, path.Backend.Service.Name)
					}
				}
			}
		}
	}
	if gateways == 0 {
		add("no Deployment")
	}
	return problems
}

type podOf struct {
	owner  string
	labels map[string]string
	spec   *corev1.PodSpec
	job    bool
}

func hasPort(c corev1.Container, name string) bool {
	for _, p := range c.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func podHasPort(spec *corev1.PodSpec, name string) bool {
	for _, c := range spec.Containers {
		if hasPort(c, name) {
			return true
		}
	}
	return false
}

func selectsGateway(selector *metav1.LabelSelector, pods []podOf) bool {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false
	}
	for _, p := range pods {
		if !p.job && sel.Matches(labels.Set(p.labels)) {
			return true
		}
	}
	return false
}

func toJSON(args []string) error {
	if len(args) != 1 {
		usage()
	}
	docs, errs := decodeFile(args[0])
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	objs := make([]runtime.Object, 0, len(docs))
	for _, d := range docs {
		objs = append(objs, d.obj)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(objs)
}

func mergeValues(files []string) error {
	merged := map[string]any{}
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var values map[string]any
		if err := yaml.Unmarshal(raw, &values); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		merge(merged, values)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(merged)
}

func merge(into, from map[string]any) {
	for k, v := range from {
		if v == nil {
			delete(into, k)
			continue
		}
		sub, isMap := v.(map[string]any)
		prev, wasMap := into[k].(map[string]any)
		if isMap && wasMap {
			merge(prev, sub)
			continue
		}
		into[k] = v
	}
}

// ---- kube-play ----------------------------------------------------------

type probeSpec struct {
	Kind    string            `json:"kind"`
	Path    string            `json:"path"`
	Port    int32             `json:"port"`
	Headers map[string]string `json:"headers"`
}

type playInfo struct {
	Deployment                    string            `json:"deployment"`
	Container                     string            `json:"container"`
	Replicas                      int32             `json:"replicas"`
	Strategy                      string            `json:"strategy"`
	TerminationGracePeriodSeconds int64             `json:"terminationGracePeriodSeconds"`
	Probes                        []probeSpec       `json:"probes"`
	MetricsPort                   int32             `json:"metricsPort"`
	Jobs                          []string          `json:"jobs"`
	Claims                        []string          `json:"claims"`
	Volumes                       []string          `json:"volumes"`
	ConfigMap                     map[string]string `json:"configMap"`
	Left                          []string          `json:"left"`
	Changes                       []string          `json:"changes"`
}

func kubePlay(args []string) error {
	fs := flag.NewFlagSet("kube-play", flag.ExitOnError)
	out := fs.String("out", "", "output directory")
	hostIP := fs.String("host-ip", "127.0.0.1", "host address of the http port")
	hostPort := fs.Int("host-port", 8080, "host port of the http port")
	_ = fs.Parse(args)
	if *out == "" || fs.NArg() != 1 {
		usage()
	}
	docs, errs := decodeFile(fs.Arg(0))
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	info := playInfo{ConfigMap: map[string]string{}}
	var gateway [][]byte
	var deployment *appsv1.Deployment
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *corev1.ConfigMap:
			for k, v := range o.Data {
				info.ConfigMap[k] = v
			}
			gateway = append(gateway, marshal(o))
		case *corev1.PersistentVolumeClaim:
			info.Claims = append(info.Claims, o.Name)
			gateway = append(gateway, marshal(o))
		case *appsv1.Deployment:
			if deployment != nil {
				return errors.New("more than one Deployment")
			}
			deployment = o.DeepCopy()
		case *batchv1.Job:
			pod := &corev1.Pod{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: o.Spec.Template.Labels},
				Spec:       *o.Spec.Template.Spec.DeepCopy(),
			}
			pod.Spec.RestartPolicy = corev1.RestartPolicyNever
			if renamed := ownEmptyDirs(&pod.Spec, o.Name); len(renamed) > 0 {
				info.Changes = append(info.Changes, fmt.Sprintf("Job/%s: emptyDir volumes renamed %s (podman 4.3 names an emptyDir's volume after the volume alone: two pods' emptyDirs of one name would share it)", o.Name, strings.Join(renamed, ", ")))
			}
			for _, v := range pod.Spec.Volumes {
				if v.EmptyDir != nil {
					info.Volumes = append(info.Volumes, v.Name)
				}
			}
			file := filepath.Join(*out, "job-"+o.Name+".yaml")
			if err := os.WriteFile(file, marshal(pod), 0o644); err != nil {
				return err
			}
			info.Jobs = append(info.Jobs, o.Name)
			info.Changes = append(info.Changes, fmt.Sprintf("Job/%s: its pod template played as the Pod %s (restartPolicy Never); the harness waits for it as Helm waits for the hook", o.Name, o.Name))
		default:
			info.Left = append(info.Left, d.gvk.Kind+"/"+d.meta.GetName())
		}
	}
	if deployment == nil {
		return errors.New("no Deployment")
	}
	info.Deployment = deployment.Name
	if deployment.Spec.Replicas != nil {
		info.Replicas = *deployment.Spec.Replicas
	}
	info.Strategy = string(deployment.Spec.Strategy.Type)
	if g := deployment.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		info.TerminationGracePeriodSeconds = *g
	}
	if info.Replicas > 1 {
		info.Changes = append(info.Changes, fmt.Sprintf("Deployment/%s: replicas %d -> 1 (one pod per Deployment here: hostPort 8080 is one port)", deployment.Name, info.Replicas))
		one := int32(1)
		deployment.Spec.Replicas = &one
	}
	spec := &deployment.Spec.Template.Spec
	if renamed := ownEmptyDirs(spec, deployment.Name); len(renamed) > 0 {
		info.Changes = append(info.Changes, fmt.Sprintf("Deployment/%s: emptyDir volumes renamed %s (podman 4.3 names an emptyDir's volume after the volume alone: two pods' emptyDirs of one name would share it)", deployment.Name, strings.Join(renamed, ", ")))
	}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			info.Volumes = append(info.Volumes, v.Name)
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.Name != "gateway" {
			continue
		}
		info.Container = c.Name
		ports := map[string]int32{}
		var kept []corev1.ContainerPort
		for _, port := range c.Ports {
			ports[port.Name] = port.ContainerPort
			if port.Name == "metrics" {
				info.MetricsPort = port.ContainerPort
			}
			if port.Name != "http" {
				// podman 4.3 publishes a containerPort without hostPort on
				// the host's every address, at the same number.
				info.Changes = append(info.Changes, fmt.Sprintf("container %s: port %s (%d) not declared (podman 4.3 would publish it on every host address); it is reached at the pod's address", c.Name, port.Name, port.ContainerPort))
				continue
			}
			port.HostPort = int32(*hostPort)
			port.HostIP = *hostIP
			kept = append(kept, port)
			info.Changes = append(info.Changes, fmt.Sprintf("container %s: port http gets hostPort %s:%d (the Service and the Ingress: the browser and the clients reach it there)", c.Name, *hostIP, *hostPort))
		}
		c.Ports = kept
		for kind, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
			if probe == nil || probe.HTTPGet == nil {
				continue
			}
			port := probe.HTTPGet.Port.IntVal
			if probe.HTTPGet.Port.Type == 1 {
				port = ports[probe.HTTPGet.Port.StrVal]
			}
			headers := map[string]string{}
			for _, h := range probe.HTTPGet.HTTPHeaders {
				headers[h.Name] = h.Value
			}
			info.Probes = append(info.Probes, probeSpec{Kind: kind, Path: probe.HTTPGet.Path, Port: port, Headers: headers})
		}
		sort.Slice(info.Probes, func(a, b int) bool { return info.Probes[a].Kind < info.Probes[b].Kind })
		if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil {
			info.Changes = append(info.Changes, fmt.Sprintf("container %s: probes removed (podman 4.3 would run the liveness probe as `curl` inside the image, which has none); the harness sends each probe's GET, with its headers, to the pod's address as a kubelet does", c.Name))
		}
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
		if c.Lifecycle != nil {
			c.Lifecycle = nil
			info.Changes = append(info.Changes, fmt.Sprintf("container %s: lifecycle removed (podman 4.3 has no preStop)", c.Name))
		}
	}
	if info.Container == "" {
		return errors.New("no container named gateway")
	}
	gateway = append(gateway, marshal(deployment))
	if len(info.Left) > 0 {
		info.Changes = append(info.Changes, "left out (podman plays no "+strings.Join(kindsOf(info.Left), ", ")+"): "+strings.Join(info.Left, " "))
	}
	if err := os.WriteFile(filepath.Join(*out, "gateway.yaml"), bytes.Join(gateway, []byte("---\n")), 0o644); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "probes.json"), data, 0o644); err != nil {
		return err
	}
	for _, change := range info.Changes {
		fmt.Println("changed:", change)
	}
	return nil
}

// ownEmptyDirs prefixes the pod's emptyDir volumes (and their mounts) with
// the workload's name, so that they are the pod's own under podman.
func ownEmptyDirs(spec *corev1.PodSpec, owner string) []string {
	renamed := map[string]string{}
	var said []string
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.EmptyDir == nil {
			continue
		}
		name := owner + "-" + v.Name
		renamed[v.Name] = name
		said = append(said, v.Name+" -> "+name)
		v.Name = name
	}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for j := range list[i].VolumeMounts {
				if name, ok := renamed[list[i].VolumeMounts[j].Name]; ok {
					list[i].VolumeMounts[j].Name = name
				}
			}
		}
	}
	return said
}

func kindsOf(objs []string) []string {
	seen := map[string]bool{}
	var kinds []string
	for _, o := range objs {
		k := strings.SplitN(o, "/", 2)[0]
		if !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	return kinds
}

func marshal(obj any) []byte {
	data, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return data
}
