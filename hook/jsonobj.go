package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// object is a JSON object that keeps its keys' order and its values as
// written, so editing one key leaves the rest of a settings file alone.
type object []member

type member struct {
	key string
	val json.RawMessage
}

// decodeObject reads data, which must be one JSON object.
func decodeObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return nil, jsonErr(data, dec, err)
	} else if tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	o := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonErr(data, dec, err)
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, jsonErr(data, dec, err)
		}
		o = append(o, member{tok.(string), val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonErr(data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not valid JSON: more after the object")
	}
	return o, nil
}

// jsonErr says where data stopped being JSON.
func jsonErr(data []byte, dec *json.Decoder, err error) error {
	off := min(int(dec.InputOffset()), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Errorf("not valid JSON (line %d): %v", line, err)
}

func (o object) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// set replaces key's value in place, or appends it.
func (o object) set(key string, val json.RawMessage) object {
	for i, m := range o {
		if m.key == key {
			o[i].val = val
			return o
		}
	}
	return append(o, member{key, val})
}

func (o object) del(key string) object {
	out := o[:0]
	for _, m := range o {
		if m.key != key {
			out = append(out, m)
		}
	}
	return out
}

// raw encodes o compactly.
func (o object) raw() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(m.key))
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// marshal encodes v without escaping <, > and &.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("hook: encoding JSON: " + err.Error()) // only plain values are encoded
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// pretty formats a document the way settings files are written: two
// spaces, a final newline.
func pretty(doc json.RawMessage) ([]byte, error) {
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		return nil, err
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
