//! See `aegis_gitea_mcp::fuzzing::jsonrpc_intake` for the input's shape and the invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| aegis_gitea_mcp::fuzzing::jsonrpc_intake(data));
