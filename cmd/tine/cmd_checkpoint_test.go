package main

import "testing"

func TestCheckpoint_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"checkpoint"}, exitUsage, "checkpoint takes 1 argument(s), got 0"},
		{[]string{"checkpoint", "a", "b"}, exitUsage, "got 2"},
	})
}
