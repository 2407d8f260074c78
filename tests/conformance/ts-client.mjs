// A second client library against the gateway: the official TypeScript MCP
// SDK (@modelcontextprotocol/sdk, pinned in package.json) signs in with its own
// OAuth client (discovery from the 401, RFC 9728 and RFC 8414 metadata,
// dynamic registration as a confidential client_secret_basic client, PKCE,
// `resource`), then lists the tools and calls one as the signed-in user.
//
// Then the context a client offers its person without a tool call: the
// resource templates and prompts, a file of the user's own repository found
// through a tool call and a completion and read as a resource, the files,
// issue and pull request the context argument names (read as resources, the
// file's text compared with what the seed wrote), a prompt on each, and the
// completion of `ref`.
//
// Usage: node ts-client.mjs <gateway>/mcp <expected login> [context JSON]
// The context (run.py writes it from fixture.json): {"file": {owner, repo,
// path, content}, "issue": {owner, repo, index}, "pull": {owner, repo,
// index}}; without it only the user's own repository is read.
// The person is played elsewhere (run.py, headless Chromium): this process
// prints `AUTHORIZE <url>` on stdout when the SDK wants the browser, and waits
// on its loopback /callback (RFC 8252) for the redirect. Its last stdout line
// is `RESULT <json>`; the exit status is 0 only when every check passed.
import http from "node:http";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Ajv2020 } from "ajv/dist/2020.js";

const [mcpUrl, expectedLogin, contextArgument] = process.argv.slice(2);
if (!mcpUrl || !expectedLogin) {
  console.error("usage: node ts-client.mjs <gateway>/mcp <expected login> [context JSON]");
  process.exit(2);
}
const seeded = contextArgument ? JSON.parse(contextArgument) : {};
const issuer = new URL(mcpUrl).origin;
const checks = [];
function check(name, ok, detail) {
  checks.push({ name, ok: Boolean(ok), detail });
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail === undefined ? "" : `: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`}`);
}

// The client's loopback redirect listener: one redirect, then it closes.
let resolveCallback;
const callbackReceived = new Promise((resolve) => (resolveCallback = resolve));
const listener = http.createServer((req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  if (url.pathname !== "/callback") {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
  res.end("<!doctype html><title>TypeScript SDK client</title><h1>The TypeScript SDK client received its redirect</h1>");
  resolveCallback(url.searchParams);
});
await new Promise((resolve) => listener.listen(0, "127.0.0.1", resolve));
const redirectUrl = `http://127.0.0.1:${listener.address().port}/callback`;

class MemoryProvider {
  constructor() {
    this._state = randomBytes(16).toString("base64url");
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this.authorizationUrl = undefined;
  }
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: "TypeScript MCP SDK (conformance)",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    };
  }
  state() {
    return this._state;
  }
  clientInformation() {
    return this._client;
  }
  saveClientInformation(info) {
    this._client = info;
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
    console.log(`AUTHORIZE ${url.href}`);
  }
  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }
  codeVerifier() {
    return this._verifier;
  }
}

// ------------------------------------------------ resources, prompts, completion

const FILE_TEMPLATE = "gitea://{owner}/{repo}/contents/{+path}{?ref}";
const TEMPLATES = [
  FILE_TEMPLATE,
  "gitea://{owner}/{repo}/issues/{index}",
  "gitea://{owner}/{repo}/pulls/{index}",
  "gitea://{owner}/{repo}/pulls/{index}/diff",
  "gitea://{owner}/{repo}/pulls/{index}/reviews",
];
const PROMPTS = ["draft_release_notes", "review_pull_request", "summarize_issue", "triage_issues"];

/** A gitea:// URI: each path segment percent-encoded, the ref as a query. */
function giteaUri(owner, repo, kind, tail, ref) {
  const path = String(tail).split("/").map(encodeURIComponent).join("/");
  return `gitea://${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/${kind}/${path}${ref ? `?ref=${encodeURIComponent(ref)}` : ""}`;
}

/** resources/read of `uri`: its one contents item (of that uri), else undefined. */
async function readOne(client, uri) {
  const read = await client.readResource({ uri });
  const item = read.contents?.length === 1 ? read.contents[0] : undefined;
  return item?.uri === uri ? item : undefined;
}

/** The one user text message of a prompt. */
function promptText(answer) {
  const message = answer.messages?.length === 1 ? answer.messages[0] : undefined;
  return message?.role === "user" && message.content?.type === "text" ? message.content.text : "";
}

async function contextChecks(client) {
  const capabilities = client.getServerCapabilities() ?? {};
  check("initialize: resources, prompts and completions capabilities (no subscribe, no listChanged)",
    capabilities.resources && capabilities.prompts && capabilities.completions && !capabilities.resources.subscribe &&
      !capabilities.resources.listChanged && !capabilities.prompts.listChanged, capabilities);

  const templates = (await client.listResourceTemplates()).resourceTemplates ?? [];
  const listedTemplates = templates.map((t) => t.uriTemplate).sort();
  check("resources/templates/list: the 5 gitea:// templates", JSON.stringify(listedTemplates) === JSON.stringify([...TEMPLATES].sort()), listedTemplates);
  const prompts = (await client.listPrompts()).prompts ?? [];
  const promptNames = prompts.map((p) => p.name).sort();
  check("prompts/list: the 4 prompts, each described", JSON.stringify(promptNames) === JSON.stringify(PROMPTS) && prompts.every((p) => p.description), promptNames);

  // The user's own repository, found as a client would: a tool call lists
  // the repositories, a completion of `path` lists the root, a resource
  // read gives the file.
  const mine = await client.callTool({ name: "gitea_user_current_list_repos", arguments: {} });
  const repos = JSON.parse(mine.content?.[0]?.text ?? "null")?.data ?? [];
  // The compact view names the owner (a string); Gitea's full view nests it.
  const ownerOf = (r) => (typeof r.owner === "string" ? r.owner : r.owner?.login) ?? r.full_name?.split("/")[0];
  const found = repos.find((r) => ownerOf(r) === expectedLogin);
  const own = found && { owner: { login: ownerOf(found) }, name: found.name ?? found.full_name.split("/")[1], full_name: found.full_name };
  check("tools/call gitea_user_current_list_repos: a repository of the user's own", own, own?.full_name ?? repos.map((r) => r.full_name));
  let readme;
  if (own) {
    const paths = (await client.complete({
      ref: { type: "ref/resource", uri: FILE_TEMPLATE },
      argument: { name: "path", value: "" },
      context: { arguments: { owner: own.owner.login, repo: own.name } },
    })).completion.values;
    readme = paths.find((p) => /^readme/i.test(p));
    check(`completion/complete path in ${own.full_name}: the root's entries`, readme, paths);
    if (readme) {
      const uri = giteaUri(own.owner.login, own.name, "contents", readme);
      const item = await readOne(client, uri);
      check(`resources/read ${uri}: text`, item?.text?.length > 0 && item?.mimeType?.startsWith("text/"),
        item ? `${item.mimeType}, ${item.text?.length} chars` : "no single contents item");
    }
  }

  const refs = seeded.file ?? (own && { owner: own.owner.login, repo: own.name });
  if (refs) {
    const values = (await client.complete({
      ref: { type: "ref/resource", uri: FILE_TEMPLATE },
      argument: { name: "ref", value: "" },
      context: { arguments: { owner: refs.owner, repo: refs.repo } },
    })).completion.values;
    check(`completion/complete ref in ${refs.owner}/${refs.repo}: main`, values.includes("main"), values);
  }

  if (seeded.file) {
    const { owner, repo, path, content } = seeded.file;
    const uri = giteaUri(owner, repo, "contents", path);
    const item = await readOne(client, uri);
    check(`resources/read ${uri}: the text the seed wrote`, item?.text === content, item ? { mimeType: item.mimeType, text: item.text?.slice(0, 80) } : "no single contents item");
  }

  let summarized;
  if (seeded.issue) {
    const { owner, repo, index } = seeded.issue;
    const item = await readOne(client, giteaUri(owner, repo, "issues", index));
    const title = JSON.parse(item?.text ?? "null")?.data?.title;
    check(`resources/read gitea://${owner}/${repo}/issues/${index}: the issue`, title, title);
    const text = promptText(await client.getPrompt({ name: "summarize_issue", arguments: { owner, repo, index: String(index) } }));
    summarized = title && text.includes(JSON.stringify(title));
    check(`prompts/get summarize_issue ${owner}/${repo}#${index}: one message with the title`, summarized, `${text.length} chars`);
  }
  if (seeded.pull) {
    const { owner, repo, index } = seeded.pull;
    const item = await readOne(client, giteaUri(owner, repo, "pulls", index));
    const title = JSON.parse(item?.text ?? "null")?.data?.title;
    const diff = await readOne(client, giteaUri(owner, repo, "pulls", `${index}/diff`));
    check(`resources/read gitea://${owner}/${repo}/pulls/${index} and its /diff`, title && diff?.mimeType === "text/x-diff" && diff.text?.startsWith("diff --git"),
      { title, diff: diff?.text?.length });
    const text = promptText(await client.getPrompt({ name: "review_pull_request", arguments: { owner, repo, index: String(index) } }));
    check(`prompts/get review_pull_request ${owner}/${repo}#${index}: one message with the title and the diff`,
      title && text.includes(JSON.stringify(title)) && diff?.text && text.includes(diff.text.trimEnd()), `${text.length} chars`);
  }
  const missing = await client.readResource({ uri: "gitea://no-such-owner-x/no-such-repo/issues/1" }).then(
    () => null,
    (error) => error,
  );
  check("resources/read of a missing repository: JSON-RPC -32002 with data.uri", missing?.code === -32002 && missing?.data?.uri === "gitea://no-such-owner-x/no-such-repo/issues/1",
    missing ? { code: missing.code, message: missing.message } : "no error");
  return { templates: templates.length, prompts: prompts.length, readme };
}

const provider = new MemoryProvider();
const client = new Client({ name: "aegis-conformance-ts-client", version: "1.0.0" });
let result = { ok: false };
try {
  // 1. The first connect meets the 401: the SDK discovers, registers and
  //    sends the person to the authorization URL.
  let transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  let unauthorized = false;
  try {
    await client.connect(transport);
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    unauthorized = true;
  }
  check("the first connect needs a sign-in (401 → UnauthorizedError)", unauthorized);
  const info = provider.clientInformation();
  check("dynamic registration gave a client_id and a client_secret", info?.client_id && info?.client_secret, {
    token_endpoint_auth_method: info?.token_endpoint_auth_method,
  });
  const authorize = provider.authorizationUrl;
  check("the authorization URL is our /authorize with S256 and resource", authorize?.href.startsWith(`${issuer}/authorize?`) &&
    authorize.searchParams.get("code_challenge_method") === "S256" &&
    authorize.searchParams.get("resource") === mcpUrl, authorize?.href.split("?")[0]);

  // 2. The redirect back: state and RFC 9207 iss, then the code exchange.
  const params = await callbackReceived;
  listener.close();
  check("the redirect carries no error", !params.has("error"), params.get("error") ?? undefined);
  check("the redirect's state is ours", params.get("state") === provider.state());
  check("the redirect's iss is the issuer (RFC 9207)", params.get("iss") === issuer, params.get("iss"));
  await transport.finishAuth(params.get("code"));
  const tokens = provider.tokens();
  check("the code was exchanged for our tokens", tokens?.access_token?.startsWith("agm_") && tokens?.refresh_token?.startsWith("agm_"), {
    token_type: tokens?.token_type,
    expires_in: tokens?.expires_in,
    scope: tokens?.scope,
  });

  // 3. Connected: initialize, tools/list (every page), tools/call.
  transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  await client.connect(transport);
  const server = client.getServerVersion();
  check("initialize: server info", server?.name === "aegis-gitea-mcp", `${server?.name} ${server?.version}, protocol ${transport.protocolVersion ?? "(not sent)"}`);
  check("initialize: tools capability", client.getServerCapabilities()?.tools !== undefined);
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  check("tools/list: the whole catalog", tools.length > 400, `${tools.length} tools`);

  // Every inputSchema is a valid JSON Schema 2020-12 document and compiles.
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  const badSchemas = [];
  for (const tool of tools) {
    if (!ajv.validateSchema(tool.inputSchema)) {
      badSchemas.push(`${tool.name}: ${ajv.errorsText(ajv.errors)}`);
      continue;
    }
    try {
      ajv.compile(tool.inputSchema);
    } catch (error) {
      badSchemas.push(`${tool.name}: ${error.message}`);
    }
  }
  check("every inputSchema is valid JSON Schema 2020-12 and compiles (Ajv2020)", badSchemas.length === 0,
    badSchemas.length ? badSchemas.slice(0, 5).join("; ")
      : `${tools.length} schemas, ${tools.filter((t) => "$schema" in t.inputSchema).length} with an explicit $schema (the rest default to 2020-12)`);

  const name = "gitea_user_get_current";
  check(`tools/list has ${name}`, tools.some((t) => t.name === name));
  const call = await client.callTool({ name, arguments: {} });
  const envelope = JSON.parse(call.content?.[0]?.text ?? "null");
  check(`tools/call ${name}: not an error`, !call.isError, call.isError ? envelope?.error : undefined);
  check(`tools/call ${name}: runs as the signed-in user`, envelope?.identity?.login === expectedLogin && envelope?.identity?.mode === "oauth",
    envelope?.identity);
  check(`tools/call ${name}: Gitea answered as that user`, envelope?.data?.login === expectedLogin, envelope?.data?.login);

  // A tool error (the counterpart of the suite's tools-call-error, which
  // needs the reference server's own tool): an admin-only operation as a
  // plain user is Gitea's 403, returned as a tool result with isError.
  const admin = await client.callTool({ name: "gitea_admin_search_users", arguments: {} });
  const denied = JSON.parse(admin.content?.[0]?.text ?? "null");
  check("tools/call gitea_admin_search_users as the user: isError with Gitea's 403", admin.isError === true && denied?.error?.status === 403,
    denied?.error?.kind ?? denied?.error);

  const unknown = await client.callTool({ name: "gitea_no_such_tool", arguments: {} }).then(
    () => null,
    (error) => error,
  );
  check("tools/call of an unknown tool: JSON-RPC -32602", unknown?.code === -32602, unknown?.message);

  const context = await contextChecks(client);
  await client.close();
  result = { ok: checks.every((c) => c.ok), tools: tools.length, identity: envelope?.identity, ...context, checks };
} catch (error) {
  check("no exception", false, error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  result = { ok: false, checks };
} finally {
  listener.close();
}
console.log(`RESULT ${JSON.stringify(result)}`);
process.exit(result.ok ? 0 : 1);
