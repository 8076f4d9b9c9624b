package main

import "testing"

func TestEvents_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"events", "a", "b"}, exitUsage, "events takes at most 1 argument(s), got 2"},
	})
}
