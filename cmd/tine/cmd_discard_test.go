package main

import "testing"

func TestDiscard_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"discard"}, exitUsage, "discard takes 1 argument(s), got 0"},
		{[]string{"discard", "a", "b"}, exitUsage, "got 2"},
		{[]string{"discard", "a", "--force=maybe"}, exitUsage, "not true or false"},
	})
}
