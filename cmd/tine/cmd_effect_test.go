package main

import "testing"

func TestEffect_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"effect"}, exitUsage, "effect takes git-push [REMOTE [REFSPEC]], http METHOD URL or run -- CMD"},
		{[]string{"effect", "frob"}, exitUsage, "effect git-push, http or run"},
		{[]string{"effect", "http", "GET"}, exitUsage, "http takes METHOD and URL"},
		{[]string{"effect", "run"}, exitUsage, "run takes the command after --"},
		{[]string{"effect", "git-push", "a", "b", "c"}, exitUsage, "git-push takes at most REMOTE and REFSPEC"},
		{[]string{"effect", "git-push", "--data", "x"}, exitUsage, "--data is for http"},
		{[]string{"effect", "git-push"}, exitState, "this command works inside a run"},
	})
}
