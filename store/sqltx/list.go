package sqltx

import (
	"encoding/json"
	"fmt"
)

// listArg encodes v, a slice, for a list column: the slice itself for a
// database with arrays, else its JSON text.
func (t *Tx) listArg(v any) (any, error) {
	if t.d.Arrays {
		return v, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// listDest returns where to scan a list column into p, a pointer to a
// slice; see listArg.
func (t *Tx) listDest(p any) any {
	if t.d.Arrays {
		return p
	}
	return jsonText{p}
}

// jsonText scans a JSON text column into p.
type jsonText struct{ p any }

// Scan implements sql.Scanner.
func (j jsonText) Scan(src any) error {
	switch s := src.(type) {
	case string:
		return json.Unmarshal([]byte(s), j.p)
	case []byte:
		return json.Unmarshal(s, j.p)
	}
	return fmt.Errorf("a JSON column holds %T", src)
}
