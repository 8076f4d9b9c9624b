package sqltx

import "testing"

func TestNumbered(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"a = ? AND b = ?", "a = $1 AND b = $2"},
		{"VALUES (?, ?, 1, ?, false)", "VALUES ($1, $2, 1, $3, false)"},
		{"x = '?' AND y = ?", "x = '?' AND y = $1"},
		{`"odd?col" = ?`, `"odd?col" = $1`},
		{"x = 'it''s' AND y = ?", "x = 'it''s' AND y = $1"},
		{"-- who's there?\nx = ?", "-- who's there?\nx = $1"},
		{"x - ? = 1", "x - $1 = 1"},
	} {
		if got := Numbered(c.in); got != c.want {
			t.Errorf("Numbered(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
