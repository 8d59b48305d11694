// Package roundtable is a Go host's wrapper of libroundtable, the C ABI of
// roundtable: open an Engine on a repository, Call its tools as an Actor,
// Close it. Errors are *Error values carrying the stable code:
//
//	var rterr *roundtable.Error
//	if errors.As(err, &rterr) && rterr.Code == roundtable.CodeForbidden { ... }
//
// It links the library through pkg-config: `roundtable` (the shared
// library; link_dynamic.go), or with `-tags roundtable_static` the static
// archive (`roundtable-static`; link_static.go). Set PKG_CONFIG_PATH to the
// directory scripts/ffi-pc writes the .pc files to.
package roundtable

/*
#include <stdlib.h>
#include "roundtable.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Code is a stable snake_case error code, the same in Rust, C and Python.
type Code string

// The stable error codes (rt_error_code), and CodePanic for RT_PANIC: one
// per RT_* status of include/roundtable.h but RT_OK and RT_UNKNOWN_ERROR
// (codes_test.go checks both ways).
const (
	CodeInvalidPatch        Code = "invalid_patch"
	CodePatchDoesNotApply   Code = "patch_does_not_apply"
	CodeUnsupportedPatch    Code = "unsupported_patch"
	CodePathEscape          Code = "path_escape"
	CodeInvalidPath         Code = "invalid_path"
	CodeIrreversiblePatch   Code = "irreversible_patch"
	CodeInvalidArgument     Code = "invalid_argument"
	CodeIO                  Code = "io"
	CodePreconditionFailed  Code = "precondition_failed"
	CodeInvalidEditPlan     Code = "invalid_edit_plan"
	CodeIncompleteEditPlan  Code = "incomplete_edit_plan"
	CodeNotFound            Code = "not_found"
	CodeForbidden           Code = "forbidden"
	CodeConflict            Code = "conflict"
	CodeIllegalTransition   Code = "illegal_transition"
	CodeIdempotencyConflict Code = "idempotency_conflict"
	CodeDatabase            Code = "database"
	CodeIncompatibleStore   Code = "incompatible_store"
	CodeUnknownSymbol       Code = "unknown_symbol"
	CodeAmbiguousSymbol     Code = "ambiguous_symbol"
	CodeUnsupportedLanguage Code = "unsupported_language"
	CodeInvalidPolicy       Code = "invalid_policy"
	CodeStaleClaim          Code = "stale_claim"
	CodeValidationFailed    Code = "validation_failed"
	CodeBusy                Code = "busy"
	CodeSpecialFile         Code = "special_file"
	CodeCancelled           Code = "cancelled"
	CodeDeadlineExceeded    Code = "deadline_exceeded"
	CodePanic               Code = "panic"
)

// Error is a refused or failed call: the C status, the stable code, a
// message for people and the details (a JSON object) for programs.
type Error struct {
	Status  uint32
	Code    Code
	Message string
	Details json.RawMessage
}

func (e *Error) Error() string { return fmt.Sprintf("roundtable: %s: %s", e.Code, e.Message) }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &roundtable.Error{Code: roundtable.CodeNotFound}) works;
// a cancelled call is also context.Canceled, one past its deadline
// context.DeadlineExceeded.
func (e *Error) Is(target error) bool {
	switch {
	case target == context.Canceled:
		return e.Code == CodeCancelled
	case target == context.DeadlineExceeded:
		return e.Code == CodeDeadlineExceeded
	}
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrClosed is returned by calls on an Engine after Close.
var ErrClosed = errors.New("roundtable: engine is closed")

// ProposalStatus is where a proposal is in its life (the "status" of a
// proposal in every result).
type ProposalStatus string

// The proposal statuses, spelled as the core spells them.
const (
	ProposalPending  ProposalStatus = "pending"
	ProposalInReview ProposalStatus = "in_review"
	ProposalApplied  ProposalStatus = "applied"
	// ProposalRolledBack: applied, then rolled back (transaction.rollback);
	// the files are as before it, and patch.apply may land it again.
	ProposalRolledBack ProposalStatus = "rolled_back"
	ProposalRejected   ProposalStatus = "rejected"
	ProposalWithdrawn  ProposalStatus = "withdrawn"
)

// ProposalStatuses lists every status.
var ProposalStatuses = []ProposalStatus{
	ProposalPending, ProposalInReview, ProposalApplied, ProposalRolledBack, ProposalRejected, ProposalWithdrawn,
}

// Actor is who calls a tool; the host supplies it, never the agent.
type Actor struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // "agent", "human" or "orchestrator"
}

// Agent, Human and Orchestrator build actors of each kind.
func Agent(id string) Actor        { return Actor{ID: id, Kind: "agent"} }
func Human(id string) Actor        { return Actor{ID: id, Kind: "human"} }
func Orchestrator(id string) Actor { return Actor{ID: id, Kind: "orchestrator"} }

// Engine is an open workspace. It is safe for concurrent use by several
// goroutines; Close waits for calls in flight.
type Engine struct {
	mu  sync.RWMutex
	ptr *C.rt_engine
}

// takeError converts and frees an rt_error.
func takeError(status C.rt_status, cerr *C.rt_error) error {
	if cerr == nil {
		return &Error{Status: uint32(status), Code: "unknown", Message: fmt.Sprintf("status %d", uint32(status))}
	}
	defer C.rt_error_free(cerr)
	return &Error{
		Status:  uint32(status),
		Code:    Code(C.GoString(C.rt_error_code(cerr))),
		Message: C.GoString(C.rt_error_message(cerr)),
		Details: json.RawMessage(C.GoString(C.rt_error_details_json(cerr))),
	}
}

// cString is C.CString refusing an interior NUL, which C would silently
// truncate at.
func cString(field, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, &Error{
			Status:  uint32(C.RT_INVALID_ARGUMENT),
			Code:    CodeInvalidArgument,
			Message: field + ": contains a NUL byte",
			Details: json.RawMessage(fmt.Sprintf(`{"field":%q,"reason":"contains a NUL byte"}`, field)),
		}
	}
	return C.CString(s), nil
}

// Open opens the workspace at root (an existing directory). options may be
// nil for the defaults, or e.g. map[string]any{"durability": "normal"}.
func Open(root string, options map[string]any) (*Engine, error) {
	croot, err := cString("root", root)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(croot))
	var copts *C.char
	if options != nil {
		text, err := json.Marshal(options)
		if err != nil {
			return nil, err
		}
		copts = C.CString(string(text))
		defer C.free(unsafe.Pointer(copts))
	}
	var ptr *C.rt_engine
	var cerr *C.rt_error
	if st := C.rt_engine_open(croot, copts, &ptr, &cerr); st != C.RT_OK {
		return nil, takeError(st, cerr)
	}
	return &Engine{ptr: ptr}, nil
}

// Call calls tool with args as actor and returns the result as JSON. args
// is marshalled with encoding/json, except a json.RawMessage, which is
// passed as it is.
func (e *Engine) Call(tool string, args any, actor Actor) (json.RawMessage, error) {
	return e.CallContext(context.Background(), tool, args, actor)
}

// CallContext is Call under ctx: its deadline bounds every wait the call
// makes (the apply lock, a busy store, claim waits, events.wait), and
// cancelling ctx ends them; the call then fails with CodeCancelled or
// CodeDeadlineExceeded (errors.Is with context.Canceled and
// context.DeadlineExceeded) having changed nothing. A mutating call past
// its commit point returns success even if ctx was cancelled meanwhile:
// retry with an idempotency key to learn the outcome.
func (e *Engine) CallContext(ctx context.Context, tool string, args any, actor Actor) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var text []byte
	if raw, ok := args.(json.RawMessage); ok {
		text = raw
	} else {
		var err error
		if text, err = json.Marshal(args); err != nil {
			return nil, err
		}
	}
	actorText, err := json.Marshal(actor)
	if err != nil {
		return nil, err
	}
	toolText := []byte(tool)

	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.ptr == nil {
		return nil, ErrClosed
	}
	var options C.rt_call_options
	if deadline, ok := ctx.Deadline(); ok {
		ms := time.Until(deadline).Milliseconds()
		if ms < 1 {
			ms = 1
		}
		options.timeout_ms = C.uint64_t(ms)
	}
	if ctx.Done() != nil {
		cancel := C.rt_cancel_new()
		options.cancel = cancel
		stop, exited := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(exited)
			select {
			case <-ctx.Done():
				// A deadline is the call's own (timeout_ms, rounded
				// down): cancelling too would race it for the error.
				if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
					C.rt_cancel_cancel(cancel)
				}
			case <-stop:
			}
		}()
		// The handle is freed only after the goroutine stopped using it.
		defer func() {
			close(stop)
			<-exited
			C.rt_cancel_free(cancel)
		}()
	}
	// Pointer and length: no copy, and a NUL byte cannot truncate anything.
	var out *C.char
	var outLen C.size_t
	var cerr *C.rt_error
	st := C.rt_engine_call_n(e.ptr,
		bytesPtr(toolText), C.size_t(len(toolText)),
		bytesPtr(text), C.size_t(len(text)),
		bytesPtr(actorText), C.size_t(len(actorText)),
		&options, &out, &outLen, &cerr)
	if st != C.RT_OK {
		return nil, takeError(st, cerr)
	}
	defer C.rt_string_free(out)
	return json.RawMessage(C.GoBytes(unsafe.Pointer(out), C.int(outLen))), nil
}

// bytesPtr is the C view of b for the duration of a call (NULL when empty).
func bytesPtr(b []byte) *C.uchar {
	if len(b) == 0 {
		return nil
	}
	return (*C.uchar)(unsafe.Pointer(&b[0]))
}

// CallInto is Call decoding the result into out.
func (e *Engine) CallInto(tool string, args any, actor Actor, out any) error {
	raw, err := e.Call(tool, args, actor)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// Close closes the engine once every call in flight has returned. Closing
// twice is harmless.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	C.rt_engine_close(e.ptr)
	e.ptr = nil
	return nil
}

// ParsePatch describes what a patch touches ({"files": [...]}).
func ParsePatch(patch []byte) (json.RawMessage, error) {
	var p *C.uint8_t
	if len(patch) > 0 {
		cpatch := C.CBytes(patch)
		defer C.free(cpatch)
		p = (*C.uint8_t)(cpatch)
	}
	var out *C.char
	var cerr *C.rt_error
	if st := C.rt_patch_parse(p, C.size_t(len(patch)), &out, &cerr); st != C.RT_OK {
		return nil, takeError(st, cerr)
	}
	defer C.rt_string_free(out)
	return json.RawMessage(C.GoString(out)), nil
}

// Version is the library's version; ABIVersion its ABI version, which
// HeaderABIVersion (the header's) must equal.
func Version() string          { return C.GoString(C.rt_version()) }
func ABIVersion() uint32       { return uint32(C.rt_abi_version()) }
func HeaderABIVersion() uint32 { return uint32(C.RT_ABI_VERSION) }
