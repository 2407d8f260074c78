//! See `aegis_gitea_mcp::fuzzing::raw_request` for the input's shape and the invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| aegis_gitea_mcp::fuzzing::raw_request(data));
