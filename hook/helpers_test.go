package hook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The fixtures are copies of /work/shared/fixtures/agents/{claude,codex}/hooks:
// real payloads where they exist, docs examples and Codex's schemas
// otherwise. Each has its provenance beside it.
const fixtures = "testdata/fixtures"

// readFixture reads a fixture file.
func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// codexStops returns the real Codex Stop payloads, one per line.
func codexStops(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(readFixture(t, "codex/input/stop.real-codex-app-0.126.0-alpha.8.jsonl")))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}

// withCommand is a real payload with tool_input.command replaced: the
// format stays the captured one, only the command differs.
func withCommand(t testing.TB, payload []byte, cmd string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	m["tool_input"].(map[string]any)["command"] = cmd
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// codexPayload builds a Codex event no real capture exists for, from
// Codex's input schema: exactly its required fields, the common ones
// taken from a real Codex Stop payload and the rest from set.
func codexPayload(t testing.TB, schema string, set map[string]any) []byte {
	t.Helper()
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(readFixture(t, "codex/schema/"+schema+".command.input.schema.json"), &s); err != nil {
		t.Fatal(err)
	}
	var base map[string]any
	if err := json.Unmarshal(codexStops(t)[1], &base); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, k := range s.Required {
		v, ok := set[k]
		if !ok {
			v, ok = base[k]
		}
		if !ok {
			t.Fatalf("%s: no value for required field %s", schema, k)
		}
		out[k] = v
	}
	for k := range set {
		if !slices.Contains(s.Required, k) {
			t.Fatalf("%s: %s is not in the schema", schema, k)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// record is one call to a fakeRecorder.
type record struct {
	Kind string
	Data any
}

// fakeRecorder keeps records in memory; Err fails every call.
type fakeRecorder struct {
	Records []record
	Err     error
}

var _ Recorder = (*fakeRecorder)(nil)

func (f *fakeRecorder) Record(_ context.Context, kind string, data any) error {
	if f.Err != nil {
		return f.Err
	}
	f.Records = append(f.Records, record{kind, data})
	return nil
}

func (f *fakeRecorder) kinds() []string {
	var out []string
	for _, r := range f.Records {
		out = append(out, r.Kind)
	}
	return out
}
