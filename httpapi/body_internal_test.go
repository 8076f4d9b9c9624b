package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// A key twice in one object is refused, naming it by its path; the same
// key in two objects is not a duplicate.
func TestDecodeStrict_DuplicateKeys(t *testing.T) {
	type inner struct {
		Kind string `json:"kind"`
	}
	type req struct {
		Label string  `json:"label"`
		Data  inner   `json:"data"`
		List  []inner `json:"list"`
	}
	for body, dup := range map[string]string{
		`{"label":"a","label":"b"}`:                       "label",
		`{"data":{"kind":"a","kind":"b"}}`:                "data.kind",
		`{"list":[{"kind":"a"},{"kind":"b","kind":"c"}]}`: "list.kind",
		`{"list":[{"kind":"a"},{"kind":"b"}]}`:            "",
		`{"label":"kind","data":{"kind":"label"}}`:        "",
		`{"label":"a"}`:                                   "",
	} {
		var v req
		err := decodeStrict([]byte(body), &v)
		switch {
		case dup == "" && err != nil:
			t.Errorf("%s: %v", body, err)
		case dup != "" && (!errors.Is(err, tine.ErrInvalid) || !strings.Contains(err.Error(), `"`+dup+`" appears twice`)):
			t.Errorf("%s: %v, want the key %q named as twice", body, err, dup)
		}
	}
}
