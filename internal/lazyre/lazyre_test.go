package lazyre

import "testing"

func TestNew_CompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+$`)
	first := re()
	if !first.MatchString("aaa") || first.MatchString("b") {
		t.Fatalf("%v does not match as ^a+$", first)
	}
	if re() != first {
		t.Error("a second call compiled the expression again")
	}
}

func TestNew_PanicsOnABadExpressionWhenUsed(t *testing.T) {
	re := New(`(`) // no panic here: nothing is compiled yet
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic on first use")
		}
	}()
	re()
}
