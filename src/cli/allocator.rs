//! Gives back to the system the memory start-up used and freed.
//!
//! Building the catalog reads Gitea's OpenAPI document into a
//! `serde_json::Value` tree, resolves it into a tool per operation and
//! drops the tree.
//! glibc's allocator keeps the freed pages in its heap for reuse, and the
//! requests never reuse them: they are served on the runtime's worker
//! threads, which allocate from arenas of their own. So megabytes stayed
//! resident for the life of the process (`docs/benchmarks.md`, "Memory").
//! One `malloc_trim(0)` once the application is built returns them.
//!
//! This is the crate's only `unsafe` (an architecture test holds it so):
//! the standard library and the `libc` crate have no safe form of the call.

/// Returns the allocator's free pages to the system; whether any were.
/// Elsewhere than glibc it does nothing: musl and the other allocators
/// give large free blocks back themselves, or have no such call.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn release_free_memory() -> bool {
    // SAFETY: `malloc_trim` takes no pointer and touches only the
    // allocator's own free lists, under the locks of its arenas.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn freed_start_up_memory_goes_back_to_the_system() {
        // Many small blocks, most freed, one kept at the end: the freed
        // pages sit below a live block, where only a trim returns them.
        let mut blocks: Vec<Vec<u8>> = (0..20_000).map(|i| vec![i as u8; 512]).collect();
        let kept = blocks.pop();
        drop(blocks);
        assert!(release_free_memory());
        assert_eq!(kept.map(|block| block.len()), Some(512));
    }
}
