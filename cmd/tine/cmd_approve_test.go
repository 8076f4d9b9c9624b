package main

import "testing"

func TestApprove_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"approve"}, exitUsage, "approve takes 1 argument(s), got 0"},
		{[]string{"approve", "a", "b"}, exitUsage, "got 2"},
	})
}
