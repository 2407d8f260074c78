//! See `aegis_gitea_mcp::fuzzing::host_origin` for the input's shape and the invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| aegis_gitea_mcp::fuzzing::host_origin(data));
