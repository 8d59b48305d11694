// Package roundtable is the Go binding of libroundtable, the C ABI of
// roundtable: open an Engine on a repository, bind a Session to an Actor,
// and call every tool through its typed method (generated from the tool
// registry's schemas, scripts/gen-go), each with a context.Context:
//
//	e, err := roundtable.Open(root, nil)
//	author := e.Session(roundtable.AsAgent("ada"))
//	made, err := author.ProposalCreate(ctx, roundtable.ProposalCreateArgs{TaskID: "t", ...})
//
// Errors are *Error values carrying the stable code, matched with
// errors.Is against the sentinels (ErrNotFound, ErrConflict, ...):
//
//	if errors.Is(err, roundtable.ErrForbidden) { ... }
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

// The codes of the core's error-code table (CodeInvalidPatch ... ) are
// generated in codes_gen.go (scripts/gen-go). CodePanic is the ABI's own:
// RT_PANIC, a bug inside roundtable caught at the C boundary.
const CodePanic Code = "panic"

// Error is a refused or failed call: the C status, the stable code, a
// message for people and the details (a JSON object) for programs.
type Error struct {
	Status  uint32
	Code    Code
	Message string
	Details json.RawMessage
}

func (e *Error) Error() string { return fmt.Sprintf("roundtable: %s: %s", e.Code, e.Message) }

// detailsInto is what each typed details accessor does.
func (e *Error) detailsInto(code Code, decode func(*decoder)) error {
	if e.Code != code {
		return fmt.Errorf("roundtable: a %s error has no %s details", e.Code, code)
	}
	return unmarshal(e.Details, decode)
}

// DecodeDetails decodes the error's details into out (a struct of the
// details of its code, or a map). With errors.json, details_gen.go has a
// typed accessor per code whose details the registry describes
// (e.NotFoundDetails()...).
func (e *Error) DecodeDetails(out any) error { return json.Unmarshal(e.Details, out) }

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

// ErrPanic matches every RT_PANIC error (the sentinels of the core's codes,
// ErrNotFound ..., are generated in codes_gen.go).
var ErrPanic = &Error{Code: CodePanic}

// CodeClosed is the binding's own code for a call on a closed (or closing)
// Engine: the library has no such condition (a call must not reach it
// after rt_engine_close), so no C status names it, and ErrClosed's Status
// is RT_UNKNOWN_ERROR.
const CodeClosed Code = "closed"

// ErrClosed is the error of every call made on an Engine once Close has
// begun (and on a nil Engine): an *Error with CodeClosed, returned at once
// without calling the library. errors.Is(err, ErrClosed) matches it.
var ErrClosed = &Error{
	Status:  uint32(C.RT_UNKNOWN_ERROR),
	Code:    CodeClosed,
	Message: "the engine is closed",
	Details: json.RawMessage(`{}`),
}

// AsAgent, AsHuman and AsOrchestrator build actors of each kind.
func AsAgent(id string) Actor        { return Actor{ID: id, Kind: ActorKindAgent} }
func AsHuman(id string) Actor        { return Actor{ID: id, Kind: ActorKindHuman} }
func AsOrchestrator(id string) Actor { return Actor{ID: id, Kind: ActorKindOrchestrator} }

// Ptr returns a pointer to v: for the optional fields of the argument
// structs (Revision: roundtable.Ptr(int64(2))).
func Ptr[T any](v T) *T { return &v }

// Engine is an open workspace. It is safe for concurrent use by several
// goroutines. Close ends it promptly: new calls fail with ErrClosed at
// once, the waits of calls in flight are cancelled, and the library's
// engine is freed once they have returned.
type Engine struct {
	mu  sync.Mutex
	ptr *C.rt_engine // nil once Close has begun
	// closeAll cancels the calls whose context has no Done channel (they
	// share it: a context.Background() call costs no handle of its own).
	closeAll *C.rt_cancel
	// inflight counts the calls inside the library; handles holds the
	// cancellation handle of each call in flight that has its own.
	inflight int
	handles  map[*C.rt_cancel]struct{}
	// idle is closed when the last call in flight returns after Close
	// began; closed is closed when Close returns. orphan is the library's
	// engine when Close gave up waiting: the last call to return frees it.
	idle   chan struct{}
	closed chan struct{}
	orphan *C.rt_engine
}

// closeWait bounds how long Close waits for the calls in flight once it
// has cancelled their waits.
const closeWait = 60 * time.Second

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

// invalidArgument is the *Error for an argument refused before the call.
func invalidArgument(field, reason string) *Error {
	details, _ := json.Marshal(map[string]string{"field": field, "reason": reason})
	return &Error{
		Status:  uint32(C.RT_INVALID_ARGUMENT),
		Code:    CodeInvalidArgument,
		Message: field + ": " + reason,
		Details: details,
	}
}

// cString is C.CString refusing an interior NUL, which C would silently
// truncate at.
func cString(field, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, invalidArgument(field, "contains a NUL byte")
	}
	return C.CString(s), nil
}

// Open opens the workspace at root (an existing directory). options may be
// nil for the defaults, or e.g. map[string]any{"durability": "normal"};
// map[string]any{"store": "postgres://user@host/db?schema=NAME"} puts the
// governance store in a PostgreSQL database several hosts share.
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
	if err := checkVersions(linkedVersions()); err != nil {
		return nil, err
	}
	if st := C.rt_engine_open(croot, copts, &ptr, &cerr); st != C.RT_OK {
		return nil, takeError(st, cerr)
	}
	return &Engine{ptr: ptr, closeAll: C.rt_cancel_new(), handles: map[*C.rt_cancel]struct{}{}}, nil
}

// ErrVersion is returned by Open when the library linked is not the one
// this package was built for: its ABI version differs from the header's,
// or its JSON-surface version from the one the types were generated from.
var ErrVersion = errors.New("roundtable: library version mismatch")

// CheckVersions compares the linked library's ABI and JSON versions with
// this package's (Open calls it).
func CheckVersions() error {
	return checkVersions(linkedVersions())
}

// linkedVersions is the linked library's ABI and JSON versions (a test
// replaces it to see Open refuse another library).
var linkedVersions = func() (abi, jsonVersion uint32) {
	return ABIVersion(), JSONLibraryVersion()
}

func checkVersions(abi, jsonVersion uint32) error {
	if abi != HeaderABIVersion() {
		return fmt.Errorf("%w: libroundtable ABI %d, this package was built against ABI %d", ErrVersion, abi, HeaderABIVersion())
	}
	if jsonVersion != JSONVersion {
		return fmt.Errorf("%w: libroundtable speaks JSON version %d, these types are version %d (regenerate with scripts/gen-go)", ErrVersion, jsonVersion, JSONVersion)
	}
	return nil
}

// Call calls tool as actor with args (marshalled with encoding/json, which
// uses the generated MarshalJSON of this package's types; a
// json.RawMessage or []byte is passed as it is) and returns the result as
// JSON. ctx's
// deadline bounds every wait the call makes (the apply lock, a busy store,
// claim waits, events.wait), and cancelling ctx ends them; the call then
// fails with CodeCancelled or CodeDeadlineExceeded (errors.Is with
// context.Canceled and context.DeadlineExceeded) having changed nothing. A
// mutating call past its commit point returns success even if ctx was
// cancelled meanwhile: retry with an idempotency key to learn the outcome.
func (e *Engine) Call(ctx context.Context, actor Actor, tool string, args any) (json.RawMessage, error) {
	actorJSON, err := encodeActor(actor)
	if err != nil {
		return nil, err
	}
	return e.call(ctx, actorJSON, tool, args)
}

// encodeActor is the actor's JSON, refusing an id that is not UTF-8.
func encodeActor(actor Actor) ([]byte, error) {
	var enc encoder
	actor.encode(&enc)
	if enc.err != nil {
		return nil, invalidArgument("actor", enc.err.Error())
	}
	return enc.buf, nil
}

// CallInto is Call decoding the result into out.
func (e *Engine) CallInto(ctx context.Context, actor Actor, tool string, args any, out any) error {
	raw, err := e.Call(ctx, actor, tool, args)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// Session binds actor to the engine: every tool as a typed method that
// needs no actor (tools_gen.go). Give an agent's goroutine its session and
// it can act as nobody else. Sessions are cheap and safe for concurrent use.
func (e *Engine) Session(actor Actor) *Session {
	actorJSON, err := encodeActor(actor)
	return &Session{engine: e, actor: actor, actorJSON: actorJSON, actorErr: err}
}

// Session is an Engine bound to one Actor.
type Session struct {
	engine    *Engine
	actor     Actor
	actorJSON []byte
	actorErr  error
}

// Actor is who the session's calls are made as.
func (s *Session) Actor() Actor { return s.actor }

// Call calls any tool as the session's actor (see Engine.Call).
func (s *Session) Call(ctx context.Context, tool string, args any) (json.RawMessage, error) {
	if s.actorErr != nil {
		return nil, s.actorErr
	}
	return s.engine.call(ctx, s.actorJSON, tool, args)
}

// invoke is what each typed method does: the arguments encoded into a
// pooled buffer (no reflection), the result decoded straight from the
// library's buffer into the result struct.
func (s *Session) invoke(ctx context.Context, tool string, encode func(*encoder), decode func(*decoder)) error {
	if s.actorErr != nil {
		return s.actorErr
	}
	st := getCallState()
	defer putCallState(st)
	encode(&st.enc)
	if err := st.enc.err; err != nil {
		var bad *notUTF8
		if errors.As(err, &bad) {
			return invalidArgument(bad.field, "not valid UTF-8 (send a patch's bytes as PatchBase64)")
		}
		return invalidArgument(tool, err.Error())
	}
	return s.engine.callWith(ctx, s.actorJSON, tool, st.enc.buf, st, func(result []byte) error {
		st.dec = shared(result) // strings are copied out of the library's buffer
		st.dec.scratch = st.scratch
		decode(&st.dec)
		st.scratch = st.dec.scratch
		if err := st.dec.finish(); err != nil {
			return fmt.Errorf("roundtable: %s: the result: %w", tool, err)
		}
		return nil
	})
}

func (e *Engine) call(ctx context.Context, actorJSON []byte, tool string, args any) (json.RawMessage, error) {
	var text []byte
	switch raw := args.(type) {
	case json.RawMessage:
		text = raw
	case []byte:
		text = raw
	default:
		var err error
		if text, err = json.Marshal(args); err != nil {
			var bad *notUTF8
			if errors.As(err, &bad) {
				return nil, invalidArgument(bad.field, "not valid UTF-8 (send a patch's bytes as PatchBase64)")
			}
			return nil, err
		}
	}
	var result json.RawMessage
	st := getCallState()
	defer putCallState(st)
	err := e.callWith(ctx, actorJSON, tool, text, st, func(out []byte) error {
		result = append(json.RawMessage(nil), out...)
		return nil
	})
	return result, err
}

// callState is one call's working memory, pooled: the arguments' encoder,
// the result's decoder and the out-parameters the library writes (Go
// variables whose address goes to C would each be a heap allocation). Its
// fields' addresses go to C as &st.field expressions, so that cgo checks
// that field only, not the whole struct (which holds Go pointers).
type callState struct {
	enc     encoder
	dec     decoder
	scratch []byte
	opts    C.rt_call_options
	out     *C.char
	outLen  C.size_t
	cerr    *C.rt_error
}

var callStates = sync.Pool{New: func() any { return &callState{enc: encoder{buf: make([]byte, 0, 512)}} }}

func getCallState() *callState {
	st := callStates.Get().(*callState)
	st.enc.buf, st.enc.err = st.enc.buf[:0], nil
	return st
}

func putCallState(st *callState) {
	st.dec = decoder{} // no reference to the last result
	if cap(st.enc.buf) > 64<<10 || cap(st.scratch) > 64<<10 {
		return // a big patch's buffers are not kept
	}
	callStates.Put(st)
}

// callWith makes the call and hands the result, still in the library's
// buffer (valid only during use), to use: a typed method decodes it from
// there without copying it first.
func (e *Engine) callWith(ctx context.Context, actorJSON []byte, tool string, text []byte, st *callState, use func([]byte) error) error {
	if err := ctx.Err(); err != nil {
		return contextError(err)
	}
	toolText := unsafe.Slice(unsafe.StringData(tool), len(tool))

	// Each call gets a cancellation handle Close can reach: its own when
	// ctx can end (ctx cancels it too), else the engine's shared one.
	var own *C.rt_cancel
	if ctx.Done() != nil {
		own = C.rt_cancel_new()
	}
	ptr, cancel, err := e.enter(own)
	if err != nil {
		C.rt_cancel_free(own)
		return err
	}
	defer e.leave(own)
	st.opts = C.rt_call_options{cancel: cancel}
	if own != nil {
		if deadline, ok := ctx.Deadline(); ok {
			ms := time.Until(deadline).Milliseconds()
			if ms < 1 {
				ms = 1
			}
			st.opts.timeout_ms = C.uint64_t(ms)
		}
		// No goroutine waits for ctx: AfterFunc runs one only once ctx is
		// done.
		ran := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			defer close(ran)
			// A deadline is the call's own (timeout_ms, rounded down):
			// cancelling too would race it for the error.
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				C.rt_cancel_cancel(own)
			}
		})
		// The handle is freed (by leave) only once nothing can use it.
		defer func() {
			if !stop() {
				<-ran
			}
		}()
	}
	// Pointer and length: no copy, and a NUL byte cannot truncate anything.
	st.out, st.outLen, st.cerr = nil, 0, nil
	status := C.rt_engine_call_n(ptr,
		bytesPtr(toolText), C.size_t(len(toolText)),
		bytesPtr(text), C.size_t(len(text)),
		bytesPtr(actorJSON), C.size_t(len(actorJSON)),
		&st.opts, &st.out, &st.outLen, &st.cerr)
	if status != C.RT_OK {
		err := takeError(status, st.cerr)
		if status == C.RT_CANCELLED && ctx.Err() == nil && e.closing() {
			err.(*Error).Message = "cancelled: the engine is closing"
		}
		return err
	}
	defer C.rt_string_free(st.out)
	return use(unsafe.Slice((*byte)(unsafe.Pointer(st.out)), int(st.outLen)))
}

// contextError is the *Error of a call whose context ended before it
// began: the library's own codes for it, so that errors.Is matches both the
// sentinel and the context error.
func contextError(err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Status: uint32(C.RT_DEADLINE_EXCEEDED), Code: CodeDeadlineExceeded,
			Message: "the context's deadline passed before the call", Details: json.RawMessage(`{}`)}
	}
	return &Error{Status: uint32(C.RT_CANCELLED), Code: CodeCancelled,
		Message: "the context was cancelled before the call", Details: json.RawMessage(`{}`)}
}

// bytesPtr is the C view of b for the duration of a call (NULL when empty).
func bytesPtr(b []byte) *C.uchar {
	if len(b) == 0 {
		return nil
	}
	return (*C.uchar)(unsafe.Pointer(&b[0]))
}

// enter registers a call about to enter the library (with its own
// cancellation handle, or nil) and returns the engine to call, or
// ErrClosed once Close has begun.
func (e *Engine) enter(own *C.rt_cancel) (*C.rt_engine, *C.rt_cancel, error) {
	if e == nil {
		return nil, nil, ErrClosed
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ptr == nil {
		return nil, nil, ErrClosed
	}
	e.inflight++
	if own != nil {
		e.handles[own] = struct{}{}
		return e.ptr, own, nil
	}
	return e.ptr, e.closeAll, nil
}

// leave is enter's other half, once the call has returned: it frees the
// call's own handle and wakes Close after the last call in flight.
func (e *Engine) leave(own *C.rt_cancel) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if own != nil {
		delete(e.handles, own)
		C.rt_cancel_free(own)
	}
	e.inflight--
	if e.inflight == 0 && e.idle != nil {
		close(e.idle)
		e.idle = nil
	}
	if e.inflight == 0 && e.orphan != nil {
		e.free(e.orphan)
		e.orphan = nil
	}
}

// free frees the library's engine and the shared handle, once no call can
// use them.
func (e *Engine) free(ptr *C.rt_engine) {
	C.rt_engine_close(ptr)
	C.rt_cancel_free(e.closeAll)
	e.closeAll = nil
}

// closing reports whether Close has begun.
func (e *Engine) closing() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ptr == nil
}

// Close ends the engine promptly: from its first instant every new call
// fails with ErrClosed without calling the library; every call in flight
// has its waits cancelled (events.wait, inbox.wait, a claim's wait_ms, the
// apply lock, a busy store), so it returns CodeCancelled having changed
// nothing, or its result if it had passed its commit point; Close waits
// for them (at most 60 s; one still inside the library after that keeps
// the library's engine alive until it returns, since the library counts
// its references, and the last of them to return frees it) and frees the
// engine. Closing a nil or closed Engine,
// or closing twice, is harmless; a second Close returns once the first
// has finished.
func (e *Engine) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	if e.ptr == nil {
		done := e.closed
		e.mu.Unlock()
		if done != nil {
			<-done
		}
		return nil
	}
	ptr := e.ptr
	e.ptr = nil
	e.closed = make(chan struct{})
	defer close(e.closed)
	C.rt_cancel_cancel(e.closeAll)
	for h := range e.handles {
		C.rt_cancel_cancel(h)
	}
	var idle chan struct{}
	if e.inflight > 0 {
		idle = make(chan struct{})
		e.idle = idle
	}
	e.mu.Unlock()
	if idle != nil {
		timer := time.NewTimer(closeWait)
		defer timer.Stop()
		select {
		case <-idle:
		case <-timer.C:
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inflight > 0 {
		e.orphan = ptr // still inside the library: the last to return frees it
		return nil
	}
	e.free(ptr)
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

// MakePatch is the git-style patch that turns a regular file's contents old
// into new at path (a repository path, `src/app.go`), made by the library
// with the diff the engine renders itself (three lines of context, `GIT
// binary patch` for binary contents), for ProposalCreateArgs.Patch — or,
// when the contents are not UTF-8, PatchBase64
// (base64.StdEncoding.EncodeToString([]byte(patch))). Both sides exist
// (nil is an empty file); MakeCreatePatch and MakeDeletePatch make a file
// appear or go. Equal contents make "" (no change, which no tool accepts).
// A path that is not a repository path is ErrInvalidPath or ErrPathEscape.
func MakePatch(path string, old, new []byte) (string, error) {
	return makePatch(path, nonNil(old), nonNil(new))
}

// MakeCreatePatch is the patch that creates the file path with contents
// data (see MakePatch).
func MakeCreatePatch(path string, data []byte) (string, error) {
	return makePatch(path, nil, nonNil(data))
}

// MakeDeletePatch is the patch that deletes the file path, whose contents
// are data (see MakePatch).
func MakeDeletePatch(path string, data []byte) (string, error) {
	return makePatch(path, nonNil(data), nil)
}

// nonNil is b, or an empty slice for nil: makePatch's nil is an absent file.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// makePatch calls rt_patch_make; a nil side is an absent file.
func makePatch(path string, old, new []byte) (string, error) {
	side := func(b []byte) (*C.uint8_t, C.size_t, func()) {
		if b == nil {
			return nil, 0, func() {}
		}
		// C memory: a non-NULL pointer even for an empty file.
		p := C.malloc(C.size_t(len(b)) + 1)
		copy(unsafe.Slice((*byte)(p), len(b)), b)
		return (*C.uint8_t)(p), C.size_t(len(b)), func() { C.free(p) }
	}
	oldPtr, oldLen, freeOld := side(old)
	defer freeOld()
	newPtr, newLen, freeNew := side(new)
	defer freeNew()
	cpath := C.CBytes([]byte(path))
	defer C.free(cpath)
	var out *C.char
	var outLen C.size_t
	var cerr *C.rt_error
	if st := C.rt_patch_make((*C.uint8_t)(cpath), C.size_t(len(path)), oldPtr, oldLen, newPtr, newLen, &out, &outLen, &cerr); st != C.RT_OK {
		return "", takeError(st, cerr)
	}
	defer C.rt_string_free(out)
	return C.GoStringN(out, C.int(outLen)), nil
}

// ToolsJSON is every tool of the linked library with its schemas
// (rt_tools_json): what the typed methods were generated from.
func ToolsJSON() (json.RawMessage, error) {
	var out *C.char
	var cerr *C.rt_error
	if st := C.rt_tools_json(&out, &cerr); st != C.RT_OK {
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

// JSONLibraryVersion is the JSON-surface version the linked library speaks
// (rt_json_version), which must equal JSONVersion.
func JSONLibraryVersion() uint32 { return uint32(C.rt_json_version()) }
