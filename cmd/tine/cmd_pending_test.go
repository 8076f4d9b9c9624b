package main

import "testing"

func TestPending_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"pending", "a", "b"}, exitUsage, "pending takes at most 1 argument(s), got 2"},
	})
}
