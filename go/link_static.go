//go:build roundtable_static

package roundtable

// The static archive scripts/ffi-static makes (only rt_* global), with the
// system libraries it needs: no extra flags.

/*
#cgo pkg-config: roundtable-static
*/
import "C"
