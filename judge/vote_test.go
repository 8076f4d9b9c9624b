package judge

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine"
)

// fakeJudge is a Judge made of a function.
type fakeJudge struct {
	judge func(ctx context.Context, task string, cands []Candidate) (*Verdict, error)
}

var _ Judge = fakeJudge{}

func (f fakeJudge) Judge(ctx context.Context, task string, cands []Candidate) (*Verdict, error) {
	return f.judge(ctx, task, cands)
}

// byFirst is a fake judge answering each round by the candidate it sees
// first; Vote rotates the candidates, so with as many rounds as
// candidates that names the round.
func byFirst(answers map[string]*Verdict) fakeJudge {
	return fakeJudge{func(_ context.Context, _ string, cands []Candidate) (*Verdict, error) {
		return answers[cands[0].Run], nil
	}}
}

func pick(run string, conf float64) *Verdict {
	return &Verdict{Judge: "fake", Winner: run, Confidence: conf, Scores: map[string]float64{"a": 0.1, "b": 0.2, "c": 0.3}, Rationale: "picked " + run}
}

func abc() []Candidate { return []Candidate{done("a"), done("b"), done("c")} }

func TestVote(t *testing.T) {
	tests := []struct {
		name    string
		rounds  int
		answers map[string]*Verdict
		winner  string
		conf    float64
		because string
	}{
		{"unanimous", 3, map[string]*Verdict{"a": pick("b", 0.9), "b": pick("b", 0.6), "c": pick("b", 0.9)}, "b", 0.8, "3 of 3 rounds picked name-b (mean confidence 0.80). Round 1: picked b"},
		{"majority", 0, map[string]*Verdict{"a": pick("a", 0.9), "b": pick("a", 0.6), "c": pick("b", 0.8)}, "a", 0.5, "2 of 3 rounds picked name-a (mean confidence 0.75)"},
		{"no majority", 3, map[string]*Verdict{"a": pick("a", 0.9), "b": pick("b", 0.9), "c": pick("c", 0.9)}, "", 0, "No majority in 3 rounds (name-a 1, name-b 1, name-c 1), so no winner."},
		{"abstentions", 3, map[string]*Verdict{"a": pick("a", 0.9), "b": pick("", 0), "c": pick("", 0)}, "", 0, "name-a 1, 2 without a winner"},
		{"even split", 2, map[string]*Verdict{"a": pick("a", 0.9), "b": pick("b", 0.9)}, "", 0, "No majority in 2 rounds"},
		{"one round", 1, map[string]*Verdict{"a": pick("c", 0.7)}, "c", 0.7, "1 of 1 rounds picked name-c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := abc()
			v, err := Vote(context.Background(), byFirst(tt.answers), tt.rounds, "task", cands)
			if err != nil {
				t.Fatalf("Vote: %v", err)
			}
			checkVerdict(t, v, cands)
			if v.Judge != "vote" || v.Winner != tt.winner || math.Abs(v.Confidence-tt.conf) > 1e-9 {
				t.Errorf("judge %q winner %q confidence %v; want vote %q %v", v.Judge, v.Winner, v.Confidence, tt.winner, tt.conf)
			}
			if !strings.Contains(v.Rationale, tt.because) {
				t.Errorf("rationale %q; want it to contain %q", v.Rationale, tt.because)
			}
			rounds := tt.rounds
			if rounds <= 0 {
				rounds = DefaultRounds
			}
			if len(v.Rounds) != rounds {
				t.Fatalf("%d rounds recorded; want %d", len(v.Rounds), rounds)
			}
			for i, r := range v.Rounds {
				if want := tt.answers[cands[i%len(cands)].Run]; r != want {
					t.Errorf("round %d is %+v; want %+v", i+1, r, want)
				}
			}
			if want := map[string]float64{"a": 0.1, "b": 0.2, "c": 0.3}; len(v.Scores) != 3 || v.Scores["c"] != want["c"] || v.Scores["a"] != want["a"] {
				t.Errorf("scores %v; want the rounds' mean %v", v.Scores, want)
			}
			if tt.winner == "" && v.Clears(0) {
				t.Error("a verdict without a winner clears")
			}
		})
	}
}

func TestVote_RotatesCandidates(t *testing.T) {
	var mu sync.Mutex
	firsts := map[string]int{}
	j := fakeJudge{func(_ context.Context, _ string, cands []Candidate) (*Verdict, error) {
		if got := strings.Join(runsOf(cands), ""); !strings.Contains("abcabc", got) || len(got) != 3 {
			t.Errorf("round saw %s; want a rotation of abc", got)
		}
		mu.Lock()
		firsts[cands[0].Run]++
		mu.Unlock()
		return pick("a", 1), nil
	}}
	if _, err := Vote(context.Background(), j, 6, "task", abc()); err != nil {
		t.Fatal(err)
	}
	if firsts["a"] != 2 || firsts["b"] != 2 || firsts["c"] != 2 {
		t.Errorf("first candidates %v; want each twice", firsts)
	}
}

func TestVote_Heuristic(t *testing.T) {
	cands := []Candidate{done("a", failed), done("b", passed), done("c")}
	h := judgeHeuristic(t, cands...)
	v, err := Vote(context.Background(), Heuristic{}, 0, "task", cands)
	if err != nil {
		t.Fatal(err)
	}
	if v.Winner != h.Winner || v.Confidence != h.Confidence || len(v.Rounds) != 3 {
		t.Errorf("vote %+v; want the heuristic's %s at %v over 3 rounds", v, h.Winner, h.Confidence)
	}
}

func TestVote_Errors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name  string
		j     Judge
		cands []Candidate
		is    error
		want  string
	}{
		{"no candidates", byFirst(nil), nil, ErrNoCandidates, ""},
		{"no judge", nil, abc(), tine.ErrInvalid, "no judge"},
		{"round error", fakeJudge{func(ctx context.Context, _ string, cands []Candidate) (*Verdict, error) {
			if cands[0].Run == "c" {
				return nil, boom
			}
			<-ctx.Done() // the others wait until the failure stops them
			return nil, ctx.Err()
		}}, abc(), boom, "round 3 of 3: boom"},
		{"nil verdict", byFirst(map[string]*Verdict{"a": pick("a", 1), "c": pick("a", 1)}), abc(), nil, "round 2 of 3: judge returned no verdict"},
		{"unknown winner", byFirst(map[string]*Verdict{"a": pick("a", 1), "b": pick("zz", 1), "c": pick("a", 1)}), abc(), nil, `winner "zz" is not a candidate`},
		{"confidence out of range", byFirst(map[string]*Verdict{"a": pick("a", 1), "b": pick("a", 1), "c": pick("a", math.NaN())}), abc(), nil, "confidence NaN"},
		{"judge error", LLM{Provider: ProviderOpenAI, Model: "m"}, abc(), tine.ErrInvalid, "no API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			v, err := Vote(ctx, tt.j, 3, "task", tt.cands)
			if err == nil {
				t.Fatalf("verdict %+v; want an error", v)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v; want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q; want it to contain %q", err, tt.want)
			}
			if ctx.Err() != nil {
				t.Error("Vote waited for the other rounds to time out")
			}
		})
	}
}

func TestVote_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j := fakeJudge{func(ctx context.Context, _ string, _ []Candidate) (*Verdict, error) { return nil, ctx.Err() }}
	if _, err := Vote(ctx, j, 3, "task", abc()); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v; want context.Canceled", err)
	}
}
