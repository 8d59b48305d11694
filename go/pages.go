package roundtable

import (
	"context"
	"iter"
)

// walk is what every generated <Method>All does: call page after page,
// each from the cursor the last one returned, yielding every item; a
// failed call is yielded once with a zero item and ends the walk, as does
// the loop's break (yield returning false).
func walk[A any, P any, I any, C any](
	ctx context.Context,
	call func(context.Context, A) (*P, error),
	args A,
	setCursor func(*A, *C),
	items func(*P) ([]I, *C),
) iter.Seq2[I, error] {
	return func(yield func(I, error) bool) {
		for {
			page, err := call(ctx, args)
			if err != nil {
				var zero I
				yield(zero, err)
				return
			}
			list, next := items(page)
			for _, item := range list {
				if !yield(item, nil) {
					return
				}
			}
			if next == nil {
				return
			}
			setCursor(&args, next)
		}
	}
}
