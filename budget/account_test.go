package budget

import (
	"slices"
	"strings"
	"testing"
)

func TestAssign(t *testing.T) {
	acct := func(name string) Account { return Account{Name: name, Env: map[string]string{"KEY": name}} }
	three := []Account{acct("a"), acct("b"), acct("c")}
	tests := []struct {
		name      string
		n         int
		accounts  []Account
		wantNames []string
		wantN     int
		wantNote  bool
	}{
		{"NoAccountsAmbient", 4, nil, nil, 4, false},
		{"EmptyAccountsAmbient", 4, []Account{}, nil, 4, false},
		{"ExactlyEnough", 3, three, []string{"a", "b", "c"}, 3, false},
		{"MoreThanNeeded", 2, three, []string{"a", "b"}, 2, false},
		{"FewerReducesN", 5, three, []string{"a", "b", "c"}, 3, true},
		{"OneAccount", 2, three[:1], []string{"a"}, 1, true},
		{"ZeroForks", 0, three, nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n, note := Assign(tt.n, tt.accounts)
			var names []string
			for _, a := range got {
				names = append(names, a.Name)
			}
			if !slices.Equal(names, tt.wantNames) || n != tt.wantN || len(got) != len(tt.wantNames) {
				t.Fatalf("Assign = %v, %d; want %v, %d", names, n, tt.wantNames, tt.wantN)
			}
			if tt.wantNames == nil && got != nil {
				t.Fatalf("assigned = %#v, want nil (ambient environment)", got)
			}
			if (note != "") != tt.wantNote || strings.Contains(note, "\n") {
				t.Fatalf("note = %q, want a one-line note: %v", note, tt.wantNote)
			}
		})
	}
}

func TestAssign_NoteNamesCounts(t *testing.T) {
	_, _, note := Assign(4, []Account{{Name: "x"}, {Name: "y"}})
	if !strings.Contains(note, "2") || !strings.Contains(note, "4") {
		t.Fatalf("note %q does not name both counts", note)
	}
}

func TestAssign_CopiesEnv(t *testing.T) {
	in := []Account{{Name: "a", Env: map[string]string{"K": "v"}}}
	got, _, _ := Assign(1, in)
	got[0].Env["K"] = "changed"
	if in[0].Env["K"] != "v" {
		t.Fatal("Assign shares Env maps with its input")
	}
}

func TestAccount_Environ(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"Empty", nil, []string{}},
		{"Sorted", map[string]string{"B": "2", "A": "1=one"}, []string{"A=1=one", "B=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Account{Env: tt.env}).Environ(); !slices.Equal(got, tt.want) {
				t.Fatalf("Environ = %q, want %q", got, tt.want)
			}
		})
	}
}
