package roundtable

// The JSON codec the generated types use (codec_gen.go): scripts/gen-go
// writes, for every struct, an encode method appending its JSON to an
// encoder and a decode method reading it from a decoder, with each field
// read or written by name: no reflection, no third-party package. The
// generated MarshalJSON and UnmarshalJSON call them, so encoding/json gives
// the same JSON as the typed methods.
//
// Both sides are strict where a silent change would hurt: the encoder
// refuses a string that is not UTF-8 (encoding/json would replace its bytes
// with U+FFFD, and a patch would land corrupted) and a NaN or infinite
// number; the decoder refuses malformed JSON, a fraction or an overflow in
// an integer field, and trailing data. Unknown object keys are skipped.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth bounds the nesting the decoder follows when it skips a value.
const maxDepth = 10000

// decoder reads JSON text from buf. The first error stops it: every later
// read sees the end of the input and returns a zero value.
type decoder struct {
	buf     []byte
	text    string // buf as a string when set (see shared), else ""
	pos     int
	err     error
	key     []byte // the current object key, valid until the next one
	scratch []byte // unescaped strings
}

// sharedMax is the largest input whose strings share one copy of it.
const sharedMax = 64 << 10

// shared is a decoder whose strings are substrings of one copy of data
// (one allocation instead of one per string) when data is at most
// sharedMax bytes; a string kept from the result keeps that copy alive.
func shared(data []byte) decoder {
	if len(data) > sharedMax || len(data) == 0 {
		return decoder{buf: data}
	}
	text := string(data)
	return decoder{buf: unsafe.Slice(unsafe.StringData(text), len(text)), text: text}
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("roundtable: JSON: %s at offset %d", what, d.pos)
	}
	d.pos = len(d.buf)
}

// finish checks that only whitespace follows the value read.
func (d *decoder) finish() error {
	d.ws()
	if d.err == nil && d.pos != len(d.buf) {
		d.fail("data after the value")
	}
	return d.err
}

func (d *decoder) ws() {
	if d.pos < len(d.buf) && d.buf[d.pos] > ' ' {
		return // compact JSON, the library's: no whitespace anywhere
	}
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// literal consumes word (null, true, false) if it comes next.
func (d *decoder) literal(word string) bool {
	d.ws()
	if len(d.buf)-d.pos >= len(word) && string(d.buf[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

// null consumes a null if one comes next.
func (d *decoder) null() bool {
	d.ws()
	if d.pos < len(d.buf) && d.buf[d.pos] == 'n' {
		return d.literal("null")
	}
	return false
}

// object starts reading an object: false if it is empty (or on error),
// else true with the first key in d.key and the decoder at its value.
func (d *decoder) object() bool {
	d.ws()
	if d.pos >= len(d.buf) || d.buf[d.pos] != '{' {
		d.fail("expected an object")
		return false
	}
	d.pos++
	d.ws()
	if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
		d.pos++
		return false
	}
	return d.readKey()
}

// more moves to the object's next key: false at its end (or on error).
func (d *decoder) more() bool {
	d.ws()
	if d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ',':
			d.pos++
			d.ws()
			return d.readKey()
		case '}':
			d.pos++
			return false
		}
	}
	d.fail("expected , or } in an object")
	return false
}

func (d *decoder) readKey() bool {
	key, ok := d.strBytes()
	if !ok {
		return false
	}
	d.key = key
	d.ws()
	if d.pos >= len(d.buf) || d.buf[d.pos] != ':' {
		d.fail("expected : after an object key")
		return false
	}
	d.pos++
	return true
}

// array starts reading an array: false if it is empty (or on error), else
// true with the decoder at its first item.
func (d *decoder) array() bool {
	d.ws()
	if d.pos >= len(d.buf) || d.buf[d.pos] != '[' {
		d.fail("expected an array")
		return false
	}
	d.pos++
	d.ws()
	if d.pos < len(d.buf) && d.buf[d.pos] == ']' {
		d.pos++
		return false
	}
	return true
}

// next moves to the array's next item: false at its end (or on error).
func (d *decoder) next() bool {
	d.ws()
	if d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ',':
			d.pos++
			return true
		case ']':
			d.pos++
			return false
		}
	}
	d.fail("expected , or ] in an array")
	return false
}

// str reads a string.
func (d *decoder) str() string {
	b, escaped, ok := d.string()
	if ok && !escaped && d.text != "" {
		from := d.pos - 1 - len(b) // b ends at the closing quote
		return d.text[from : from+len(b)]
	}
	return string(b)
}

// strBytes reads a string: a slice of buf when it has no escape, else of
// scratch (valid until the next string).
func (d *decoder) strBytes() ([]byte, bool) {
	b, _, ok := d.string()
	return b, ok
}

// string reads a string: the bytes (see strBytes), whether it had an
// escape, and false on error. A control character is refused only in a
// string with an escape.
func (d *decoder) string() ([]byte, bool, bool) {
	d.ws()
	if d.pos >= len(d.buf) || d.buf[d.pos] != '"' {
		d.fail("expected a string")
		return nil, false, false
	}
	start := d.pos + 1
	// Keys and short values end within a few bytes: a plain loop; longer
	// strings: IndexByte's vector search for the quote, then the backslash.
	i := start
	for limit := min(start+16, len(d.buf)); i < limit; i++ {
		if c := d.buf[i]; c == '"' {
			d.pos = i + 1
			return d.buf[start:i], false, true
		} else if c == '\\' {
			break
		}
	}
	if i == start+16 {
		end := bytes.IndexByte(d.buf[i:], '"')
		if end < 0 {
			d.fail("unterminated string")
			return nil, false, false
		}
		end += i
		if back := bytes.IndexByte(d.buf[i:end], '\\'); back < 0 {
			d.pos = end + 1
			return d.buf[start:end], false, true
		} else {
			i += back
		}
	}
	out := append(d.scratch[:0], d.buf[start:i]...)
	for i < len(d.buf) {
		c := d.buf[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.scratch = out
			return out, true, true
		case c < 0x20:
			d.pos = i
			d.fail("control character in a string")
			return nil, false, false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(d.buf) {
			break
		}
		esc := d.buf[i+1]
		i += 2
		switch esc {
		case '"', '\\', '/':
			out = append(out, esc)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d.buf, i)
			if !ok {
				d.pos = i
				d.fail("bad \\u escape")
				return nil, false, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if i+6 <= len(d.buf) && d.buf[i] == '\\' && d.buf[i+1] == 'u' {
					r2, ok = hex4(d.buf, i+2)
				}
				if pair := utf16.DecodeRune(r, r2); ok && pair != utf8.RuneError {
					r = pair
					i += 6
				} else {
					r = utf8.RuneError // a lone surrogate, as encoding/json reads it
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			d.pos = i - 1
			d.fail("bad escape in a string")
			return nil, false, false
		}
	}
	d.pos = len(d.buf)
	d.fail("unterminated string")
	return nil, false, false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number returns the extent of the JSON number that comes next.
func (d *decoder) number() []byte {
	d.ws()
	start, i := d.pos, d.pos
	digits := func() int {
		n := 0
		for i < len(d.buf) && '0' <= d.buf[i] && d.buf[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(d.buf) && d.buf[i] == '-' {
		i++
	}
	lead := i
	if n := digits(); n == 0 || (n > 1 && d.buf[lead] == '0') {
		d.fail("bad number")
		return nil
	}
	if i < len(d.buf) && d.buf[i] == '.' {
		i++
		if digits() == 0 {
			d.fail("bad number")
			return nil
		}
	}
	if i < len(d.buf) && (d.buf[i] == 'e' || d.buf[i] == 'E') {
		i++
		if i < len(d.buf) && (d.buf[i] == '+' || d.buf[i] == '-') {
			i++
		}
		if digits() == 0 {
			d.fail("bad number")
			return nil
		}
	}
	d.pos = i
	return d.buf[start:i]
}

// int64 reads an integer (no fraction, no exponent, within int64).
func (d *decoder) int64() int64 {
	text := d.number()
	if text == nil {
		return 0
	}
	n, err := strconv.ParseInt(unsafe.String(&text[0], len(text)), 10, 64)
	if err != nil {
		d.pos -= len(text)
		d.fail("not an int64: " + string(text))
		return 0
	}
	return n
}

// float64 reads a number.
func (d *decoder) float64() float64 {
	text := d.number()
	if text == nil {
		return 0
	}
	f, err := strconv.ParseFloat(unsafe.String(&text[0], len(text)), 64)
	if err != nil {
		d.pos -= len(text)
		d.fail("not a float64: " + string(text))
		return 0
	}
	return f
}

// duration reads an integer count of unit (a `_ms` or `_s` property).
func (d *decoder) duration(unit time.Duration) time.Duration {
	n := d.int64()
	if d.err == nil && (n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit)) {
		d.fail("a duration out of time.Duration's range")
		return 0
	}
	return time.Duration(n) * unit
}

// time reads an RFC 3339 timestamp (the library writes UTC with
// milliseconds: 2026-12-03T09:32:59.123Z).
func (d *decoder) time() time.Time {
	b, _, ok := d.string()
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		d.fail("not an RFC 3339 time: " + strconv.Quote(string(b)))
		return time.Time{}
	}
	return t
}

// bool reads true or false.
func (d *decoder) bool() bool {
	switch {
	case d.literal("true"):
		return true
	case d.literal("false"):
		return false
	}
	d.fail("expected true or false")
	return false
}

// raw reads any value and returns a copy of its text (nil for null).
func (d *decoder) raw() json.RawMessage {
	if d.null() {
		return nil
	}
	start := d.pos
	d.skip()
	if d.err != nil {
		return nil
	}
	return append(json.RawMessage(nil), d.buf[start:d.pos]...)
}

// skip reads any value and drops it.
func (d *decoder) skip() { d.skipDepth(0) }

func (d *decoder) skipDepth(depth int) {
	if depth > maxDepth {
		d.fail("nested too deep")
		return
	}
	d.ws()
	if d.pos >= len(d.buf) {
		d.fail("unexpected end")
		return
	}
	switch c := d.buf[d.pos]; {
	case c == '{':
		for more := d.object(); more; more = d.more() {
			d.skipDepth(depth + 1)
		}
	case c == '[':
		for more := d.array(); more; more = d.next() {
			d.skipDepth(depth + 1)
		}
	case c == '"':
		d.strBytes()
	case c == '-' || ('0' <= c && c <= '9'):
		d.number()
	case d.literal("null"), d.literal("true"), d.literal("false"):
	default:
		d.fail("unexpected character")
	}
}

// encoder appends JSON text to buf. The first error sticks.
type encoder struct {
	buf []byte
	err error
}

// notUTF8 is the error for a string the encoder refuses.
type notUTF8 struct{ field string }

func (e *notUTF8) Error() string {
	return e.field + ": not valid UTF-8; a Go string must hold UTF-8 to cross as JSON " +
		"(send a patch's bytes as PatchBase64)"
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// key writes `,"name":` (no comma right after the object's '{' at start).
func (e *encoder) key(start int, name string) {
	if len(e.buf) > start+1 {
		e.buf = append(e.buf, ',')
	}
	e.buf = append(e.buf, name...)
}

const hexDigits = "0123456789abcdef"

// str writes s as a JSON string; field names it if it is not UTF-8.
func (e *encoder) str(s string, field string) {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.buf = append(e.buf, s[start:i]...)
			switch c {
			case '"', '\\':
				e.buf = append(e.buf, '\\', c)
			case '\n':
				e.buf = append(e.buf, '\\', 'n')
			case '\r':
				e.buf = append(e.buf, '\\', 'r')
			case '\t':
				e.buf = append(e.buf, '\\', 't')
			default:
				e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			e.fail(&notUTF8{field})
			return
		}
		i += size
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}

func (e *encoder) int64(n int64) { e.buf = strconv.AppendInt(e.buf, n, 10) }

// duration writes d as an integer count of unit, a remainder rounded up
// (away from zero), so that a short positive wait never becomes 0 (which
// means "do not wait").
func (e *encoder) duration(d time.Duration, unit time.Duration) {
	n := d / unit
	if r := d % unit; r > 0 {
		n++
	} else if r < 0 {
		n--
	}
	e.buf = strconv.AppendInt(e.buf, int64(n), 10)
}

// timeLayout is the library's timestamp: UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// time writes t as the library writes a timestamp: RFC 3339 in UTC with
// milliseconds (a finer fraction is truncated).
func (e *encoder) time(t time.Time) {
	e.buf = append(e.buf, '"')
	e.buf = t.UTC().AppendFormat(e.buf, timeLayout)
	e.buf = append(e.buf, '"')
}

func (e *encoder) float64(f float64, field string) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.fail(fmt.Errorf("%s: %v is not a JSON number", field, f))
		return
	}
	e.buf = strconv.AppendFloat(e.buf, f, 'g', -1, 64)
}

func (e *encoder) bool(b bool) {
	if b {
		e.buf = append(e.buf, "true"...)
	} else {
		e.buf = append(e.buf, "false"...)
	}
}

// raw writes a json.RawMessage as it is (null when empty), once it is
// known to be one JSON value.
func (e *encoder) raw(m json.RawMessage, field string) {
	if len(m) == 0 {
		e.buf = append(e.buf, "null"...)
		return
	}
	if !json.Valid(m) {
		e.fail(fmt.Errorf("%s: not a JSON value", field))
		return
	}
	e.buf = append(e.buf, m...)
}

func (e *encoder) null() { e.buf = append(e.buf, "null"...) }

// marshal is what every generated MarshalJSON does.
func marshal(encode func(*encoder)) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, 256)}
	encode(&e)
	if e.err != nil {
		return nil, e.err
	}
	return e.buf, nil
}

// unmarshal is what every generated UnmarshalJSON does: null leaves the
// value as it is, as encoding/json does.
func unmarshal(data []byte, decode func(*decoder)) error {
	d := shared(data)
	if !d.null() {
		decode(&d)
	}
	return d.finish()
}

// sortedKeys is m's keys in order: a map encodes the same way every time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
