package fleet

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAdmitter_Admit: a request signed with the fleet key for this node
// is admitted once; replayed, sent to another node, changed on the way or
// signed with another key, it is refused.
func TestAdmitter_Admit(t *testing.T) {
	key := Key(strings.Repeat("k", 32))
	signed := func(to, body string, k Key) *http.Request {
		r := httptest.NewRequest("POST", "http://n/v1/runs/w%2Fsource/exec?x=1", strings.NewReader(body))
		k.sign(r, "b", to, []byte(body))
		return r
	}
	a := NewAdmitter(key, "a")
	r := signed("a", `{"args":["ls"]}`, key)
	replay := r.Clone(r.Context())
	if from, err := a.Admit(r); err != nil || from != "b" {
		t.Fatalf("Admit of a good request: %q, %v", from, err)
	}
	replay.Body = http.NoBody
	tampered := signed("a", `{"args":["ls"]}`, key)
	tampered.Body = http.NoBody
	moved := signed("a", "", key)
	moved.URL.RawQuery = "x=2"
	for name, r := range map[string]*http.Request{
		"replayed":      signed("a", "", key), // admitted below first
		"another node":  signed("c", "", key),
		"body changed":  tampered,
		"query changed": moved,
		"another key":   signed("a", "", Key(strings.Repeat("z", 32))),
	} {
		if name == "replayed" {
			if _, err := a.Admit(r.Clone(r.Context())); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Admit(r); !errors.Is(err, ErrForged) {
			t.Errorf("%s: Admit = %v, want ErrForged", name, err)
		}
	}
	stale := signed("a", "", key)
	stale.Header.Set(HeaderAuth, "v1 1000 "+strings.Fields(stale.Header.Get(HeaderAuth))[2])
	if _, err := a.Admit(stale); !errors.Is(err, ErrForged) {
		t.Errorf("stale: %v", err)
	}
	if _, err := (*Admitter)(nil).Admit(signed("a", "", key)); !errors.Is(err, ErrForged) {
		t.Errorf("a node without a key admitted a forwarded request: %v", err)
	}
	if _, err := ParseKey("short"); err == nil {
		t.Error("ParseKey took a 5-character key")
	}
}
