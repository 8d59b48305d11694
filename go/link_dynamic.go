//go:build !roundtable_static

package roundtable

// The shared library, libroundtable.so.0.

/*
#cgo pkg-config: roundtable
*/
import "C"
