// Preloaded into the conformance suite's Node process (`node --import`): adds
// `Authorization: Bearer $CONFORMANCE_BEARER` to every request the suite sends
// to $CONFORMANCE_TARGET (an origin, e.g. http://127.0.0.1:8392), unless the
// request already carries an Authorization header.
//
// Why: the suite's `server` command (0.2.0-alpha.12) has no option for request
// headers, and the gateway under test requires a bearer (MCP_BEARER_TOKEN).
// The scenarios reach the server three ways, and all three are covered:
//   - the TypeScript SDK's Streamable HTTP transport and raw `fetch`
//     (Node's bundled undici), wrapped below;
//   - undici's `request` (dns-rebinding-protection, the authorization
//     scenarios), through undici's global dispatcher, given an interceptor;
//   - `node:http`'s `request` (the SEP-2243 header scenarios), wrapped.
import http from "node:http";
import { Agent, setGlobalDispatcher } from "undici";

const target = process.env.CONFORMANCE_TARGET;
const bearer = process.env.CONFORMANCE_BEARER;
if (!target || !bearer) {
  throw new Error("inject-bearer.mjs needs CONFORMANCE_TARGET and CONFORMANCE_BEARER");
}
const origin = new URL(target).origin;
const value = `Bearer ${bearer}`;

function hasAuthorization(headers) {
  if (!headers) return false;
  if (typeof headers.has === "function") return headers.has("authorization");
  if (Array.isArray(headers)) {
    // flat [name, value, name, value, ...] or [[name, value], ...]
    const names = Array.isArray(headers[0]) ? headers.map((h) => h[0]) : headers.filter((_, i) => i % 2 === 0);
    return names.some((n) => String(n).toLowerCase() === "authorization");
  }
  return Object.keys(headers).some((n) => n.toLowerCase() === "authorization");
}

function withAuthorization(headers) {
  if (hasAuthorization(headers)) return headers;
  if (!headers) return { authorization: value };
  if (Array.isArray(headers)) {
    return Array.isArray(headers[0]) ? [...headers, ["authorization", value]] : [...headers, "authorization", value];
  }
  return { ...headers, authorization: value };
}

// undici's `request` (and any fetch that uses the global dispatcher).
setGlobalDispatcher(
  new Agent().compose((dispatch) => (opts, handler) => {
    const requestOrigin = typeof opts.origin === "string" ? new URL(opts.origin).origin : opts.origin?.origin;
    if (requestOrigin === origin) {
      opts = { ...opts, headers: withAuthorization(opts.headers) };
    }
    return dispatch(opts, handler);
  }),
);

// `fetch` (the SDK transport, the stateless scenarios' raw requests).
const originalFetch = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.origin !== origin) return originalFetch(input, init);
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  if (!headers.has("authorization")) headers.set("authorization", value);
  return originalFetch(input, { ...init, headers });
};

// `node:http` (the suite imports the module object and calls `.request` on it).
const originalRequest = http.request;
http.request = function request(options, ...rest) {
  if (options && typeof options === "object" && !(options instanceof URL)) {
    const host = options.hostname ?? options.host;
    const port = options.port ? `:${options.port}` : "";
    if (`${options.protocol ?? "http:"}//${host}${port}` === origin) {
      options = { ...options, headers: withAuthorization(options.headers) };
    }
  }
  return originalRequest.call(this, options, ...rest);
};
