//! Work a large change splits over two threads: the hashing of a
//! changeset's results, the staging of its files, the validation stages
//! that only read. Each caller decides when a change is large enough; the
//! results never depend on the threads' timing.

/// `apart()` and `here()`, both run: with `two`, `apart` on a second
/// thread while this one runs `here`; without, `here` and then `apart`
/// on this thread. A panic on the second thread is raised again here.
pub fn both<A: Send, H>(
    two: bool,
    apart: impl FnOnce() -> A + Send,
    here: impl FnOnce() -> H,
) -> (A, H) {
    if !two {
        let h = here();
        return (apart(), h);
    }
    std::thread::scope(|scope| {
        let thread = scope.spawn(apart);
        let h = here();
        let a = thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (a, h)
    })
}

/// `items` cut in two where the first half reaches half of `total`, the
/// sum of `size` over them: two halves of about equal weight, in order.
pub fn halves<T>(items: &[T], total: usize, size: impl Fn(&T) -> usize) -> (&[T], &[T]) {
    let mut seen = 0;
    let half = items
        .iter()
        .position(|item| {
            seen += size(item);
            seen * 2 >= total
        })
        .map_or(items.len(), |i| i + 1);
    items.split_at(half)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_runs_both_in_either_mode_and_halves_split_by_weight() {
        for two in [false, true] {
            assert_eq!(both(two, || 1 + 1, || "here"), (2, "here"));
        }
        let sizes = [1, 1, 6, 1, 1];
        let (first, second) = halves(&sizes, 10, |&s| s);
        assert_eq!((first, second), (&sizes[..3], &sizes[3..]));
        let (first, second) = halves::<usize>(&[], 0, |&s| s);
        assert!(first.is_empty() && second.is_empty());
    }
}
