// A second client library against the gateway: the official TypeScript MCP
// SDK (@modelcontextprotocol/sdk, pinned in package.json) signs in with its own
// OAuth client (discovery from the 401, RFC 9728 and RFC 8414 metadata,
// dynamic registration as a confidential client_secret_basic client, PKCE,
// `resource`), then lists the tools and calls one as the signed-in user.
//
// Usage: node ts-client.mjs <gateway>/mcp <expected login>
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

const [mcpUrl, expectedLogin] = process.argv.slice(2);
if (!mcpUrl || !expectedLogin) {
  console.error("usage: node ts-client.mjs <gateway>/mcp <expected login>");
  process.exit(2);
}
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
  await client.close();
  result = { ok: checks.every((c) => c.ok), tools: tools.length, identity: envelope?.identity, checks };
} catch (error) {
  check("no exception", false, error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  result = { ok: false, checks };
} finally {
  listener.close();
}
console.log(`RESULT ${JSON.stringify(result)}`);
process.exit(result.ok ? 0 : 1);
