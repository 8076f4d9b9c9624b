package tine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

var flag = func(o Option) string { return "--" + strings.ToUpper(o.String()) }

func TestOptionError(t *testing.T) {
	err := Optionf("%s needs the git scope, not %s (%d%%): %w", Opt("commits"), Opt("scope", "filesystem"), 3, ErrInvalid)
	if got := err.Error(); got != "commits needs the git scope, not scope=filesystem (3%): invalid argument" {
		t.Errorf("Error() = %q", got)
	}
	wrapped := fmt.Errorf("merge source-2: %w", err)
	if !errors.Is(wrapped, ErrInvalid) {
		t.Error("an OptionError does not unwrap to its sentinel")
	}
	var oe *OptionError
	if !errors.As(wrapped, &oe) {
		t.Fatal("no OptionError")
	}
	if got := oe.Text(flag); got != "--COMMITS needs the git scope, not --SCOPE=FILESYSTEM (3%): invalid argument" {
		t.Errorf("Text = %q", got)
	}
	parts := OptionParts(wrapped)
	if got := JoinParts(parts, flag); got != "merge source-2: --COMMITS needs the git scope, not --SCOPE=FILESYSTEM (3%): invalid argument" {
		t.Errorf("whole message = %q", got)
	}
	if got := JoinParts(parts, Option.String); got != wrapped.Error() {
		t.Errorf("parts in the API's words = %q, want %q", got, wrapped.Error())
	}
	rebuilt := NewOptionError(parts, fmt.Errorf("%s: %w", wrapped.Error(), ErrInvalid))
	if !errors.Is(rebuilt, ErrInvalid) || JoinParts(OptionParts(rebuilt), flag) != JoinParts(parts, flag) {
		t.Errorf("rebuilt: %v", rebuilt)
	}
	for _, p := range parts {
		if p.Option == nil && p.Text == "" {
			t.Errorf("an empty part in %+v", parts)
		}
	}
	if OptionParts(errors.New("plain")) != nil {
		t.Error("OptionParts of a plain error")
	}
}
