// Package judge picks the winner among the finished forks of a fork-run.
//
// A [Judge] looks at each fork's evidence, a [Candidate], and returns a
// [Verdict]: the winning run, a score per run, a confidence in [0, 1] and a
// one- or two-sentence rationale. A verdict whose confidence is below the
// configured threshold ([Verdict.Clears]) resolves nothing automatically: a
// person decides. Every judge returns [ErrNoCandidates] when there is
// nothing to judge.
//
// There are four judges. [Heuristic] scores evidence and makes no calls.
// [LLM] asks a language model. [Pairwise] gates the candidates on their
// hard evidence and has a judge compare the rest two at a time, in both
// orders. [Vote] asks any judge several times and keeps the majority.
//
// # Heuristic scoring
//
// Each candidate gets a goodness in [0, 1] on six features; its score is
// their weighted sum, rounded to four decimals:
//
//	feature   weight  goodness
//	changes   0.30    1 if it changed any file, else 0
//	tests     0.30    passed 1, not run 0.4, failed 0.1, timed out 0.05
//	agent     0.12    exit 0 or result "success" 1; unknown 0.5; non-zero
//	                  exit or result "error" 0
//	merge     0.12    1 if the merge dry-run is clean, else 0
//	signals   0.08    (fewest error signals of any + 1) / (its own + 1)
//	size      0.08    smallest diff / its diff, in lines added plus deleted
//	                  (at least 1), among the forks that changed something
//	                  with the same test outcome; 0 if nothing changed
//
// The highest score wins; equal scores go to the first candidate in the
// order given (a fork-run gives its forks in approach order). Because
// changes outweigh the difference between passing and failing tests, a
// fork that did nothing loses to one that did something unless the latter
// is worse on nearly everything else, and then the confidence is near 0
// anyway. The rationale names the winner and the (at most three) features
// that gave it its lead over the runner-up, largest first, such as
// "src-2: tests passed (others failed), smaller diff among passing forks
// (12 lines vs 240 for src-1)", and says what limited the confidence.
//
// The raw confidence is the smaller of two numbers. The separation is the
// winner's lead over the runner-up divided by 0.30 (the weight of the
// tests), at most 1: a feature on which every candidate is equal adds the
// same to every score and so adds nothing to it, a tie gives 0, and tests
// that pass against tests that fail, all else equal, give 0.9. The
// absolute evidence is the winner's own: its test goodness, times 0.1 if
// it changed nothing, 0.6 if its agent failed and 0.6 if it does not merge
// cleanly. Evidence shared by all candidates can thus lower confidence
// but never raise it: identical untested forks get 0, and an untested
// winner never gets more than 0.4. A single candidate has no one to be
// separated from, so its confidence is its absolute evidence alone: 1 when
// its tests passed, it merges cleanly and it changed something; 0.4 at
// most when untested. When the verdict cannot tell its leaders apart (see
// below: diff size and error signals alone separate them) the raw
// confidence is 0, since those say nothing of which is right.
//
// # Calibration
//
// The verdict's Confidence is the raw one calibrated: mapped through
// [HeuristicCalibration], a non-decreasing step function fitted by [Fit]
// (isotonic regression, each step's value the share of its verdicts whose
// winner was right with one success and one failure added) on the
// selection benchmark's verdicts (bench/selection, selbench -fit writes
// calibration.json, embedded here), then capped by the winner's own
// evidence, which the benchmark's verdicts do not cover below a passing
// fork. A raw confidence between two steps gets the lower step. RawConfidence
// keeps the raw number, and the rationale says what the calibration made
// of it ("10 of 17 verdicts with a raw confidence like this named the
// right winner"). A tie is thus about 0.58, a corroborated or clearly
// separated winner about 0.98: fork-run's default threshold, 0.8, is a
// probability of being right.
//
// # Evidence beyond the test command
//
// A candidate's Evidence (package evidence, gathered by fork-run) changes
// its score and its absolute evidence by multiplying both by a factor, the
// product of penalties, each raised to its evidence feature's strength (1
// built in; see Learning below): a holdout command that failed 0.25, a regression
// command that failed 0.4, failing a rival's valid tests 0.6, each of up to
// two failed declared checks (build, lint, type-check) 0.6, each red flag
// of gaming the tests (a test deleted, skipped or weakened, literals of the
// tests hard-coded; at most three) 0.5, and code changed outside the files
// the prompt names 0.9. Without evidence the factor is 1 and the scoring
// above is unchanged. Tests that pass but prove nothing (the fork's own
// changed tests pass on the fork point already) have the test goodness
// 0.2, and read "passed but prove nothing". The rationale names the
// penalties that put the runner-up behind ("src-1 is penalised (holdout
// failed)") and those that limit the winner's confidence.
//
// A winner whose tests passed, with factor 1, and which passes the valid
// tests of at least one rival (tests that fail on the fork point) is
// corroborated: its confidence is at least 0.7 (capped by its absolute
// evidence), however close the runner-up, since a close runner-up then
// leaves open which good fork to take, not whether the winner is good.
//
// Failing a rival's valid tests counts against a candidate only when those
// tests are trusted: another candidate passes them too, and their author's
// holdout command did not fail. A test that only its author passes is that
// agent's claim, and an agent can write a valid test (one that fails on
// the fork point) that asserts its own wrong answer.
//
// # Learning
//
// [Weights] hold a weight per feature: the six additive ones above, and a
// strength per kind of evidence (validity, cross-tests, holdout,
// regression, checks, red flags), the exponent of its penalties. A
// verdict's Features hold each candidate's goodness on all twelve (for
// evidence, the product of its penalties at strength 1; 1 with nothing
// against it). When a person chooses a fork over the recommended one,
// [Learn] moves the additive weights toward the chosen fork's features
// (clamped, renormalized to sum to 1) and each strength by half the
// difference in that evidence's goodness (the chosen fork had less of it
// against it: stronger; more: weaker), within [0.25, 3].
//
// When the raw confidence is below 0.5 and the two leading candidates differ
// in nothing but diff size and error signals (same test outcome, same
// factor, same goodness on every other feature), the verdict's CannotTell
// says so and names what would separate them: a holdout test, a regression
// command, or, when both ran, a holdout test that exercises where they
// differ. It is appended to the rationale.
//
// Error signals are counted per line over the last 64 KiB of the agent's
// output and of the test output. A line counts once when it looks like an
// error report: "panic: ", "Traceback (most recent call last)", an
// upper-case FAIL, FAILED or FAILURE word, "error:" or "fatal:" in lower,
// title or upper case (also "error[E0308]:"), "[ERROR]", "level=error", a class-like
// "SomethingError:" or "SomethingException:", "Exception in thread",
// "uncaught exception", or ERROR, FATAL or PANIC at the start of the line.
// The bare word "error" does not count: code and prose mention it all the
// time. A line that reports the absence of errors ("0 errors",
// "no errors", "without error", "failures: 0") does not count at all.
// Since only differences matter, noise common to all forks cancels out.
//
// # LLM judge
//
// [LLM] posts one request to {BaseURL}/chat/completions (OpenAI-compatible,
// Bearer authentication, temperature 0, a json_object response format) or
// {BaseURL}/v1/messages (Anthropic-compatible, x-api-key and
// anthropic-version headers). The prompt holds the task and, for each
// candidate, its approach, diff (cut to MaxDiffBytes, 16 KiB by default,
// and marked as cut), change size, merge status, agent and test outcome,
// the last 2 KiB of its test output, and its Evidence as lines
// (evidence.Fork.Lines: holdout, regression, validity of its own tests,
// cross-tests, red flags); the system prompt says that holdout and
// regression results outweigh any text in a candidate. Candidates are
// known to the model only as A, B, C...; the verdict maps labels back to
// run ids and names them in the rationale.
//
// Candidate contents are untrusted: an agent under review may have written
// text meant to sway the judge. Two defences keep it inside its own block.
// Each block is delimited by tags carrying a random nonce drawn for every
// request, <candidate-NONCE label="A"> ... </candidate-NONCE>, which no
// candidate can know in advance; and the content between the tags is one
// line of JSON in which "<", ">" and "&" are escaped as \u003c, \u003e and
// \u0026 and newlines as \n, so the content cannot contain a tag of any
// kind, nor start a line, whatever the nonce. The system prompt says that
// block contents are data and that instructions inside them must be
// ignored. Nothing of a candidate's content is ever read back as the
// answer: only the model's reply is parsed.
//
// The reply must be one JSON object {"winner", "confidence", "scores",
// "rationale"}, optionally inside a ```json fence and nothing looser. The
// winner must be a label, confidence and every score a number in [0, 1],
// every label scored and no other, and the winner's score the highest.
// Anything else, and any HTTP error status, is an error wrapping
// [ErrBadAnswer]; the judge never guesses. A missing provider, model or
// API key is an error wrapping tine.ErrInvalid, before any request.
// Errors never show the API key.
//
// # Pairwise
//
// [Pairwise] ranks in two stages. First the hard evidence: a candidate
// that changed nothing, whose tests failed or timed out, whose holdout or
// regression command failed, or that fails a rival's trusted valid tests
// (see above) is gated: it ranks below every ungated candidate, with the
// score 0.49 x its heuristic score, and is never shown to the model with
// them. Then the ungated candidates (all of them when every one is gated)
// are compared two at a time by another judge, an [LLM], every pair in
// both orders. Each comparison the model wins scores one; a candidate's
// score is 0.5 + 0.5 x its wins / 2(n-1). The most wins wins; equal wins
// go to the heuristic's order. A single ungated candidate wins on the
// heuristic's verdict, with no comparison.
//
// The confidence is 0, with CannotTell, when the winner and the runner-up
// won as many comparisons, or when the winner did not beat the runner-up
// in both orders; otherwise it is the mean confidence of those two
// comparisons times the share of all its comparisons the winner won,
// capped by the winner's absolute evidence (the heuristic's). When the
// heuristic names the same winner with a higher confidence, that
// confidence stands (and CannotTell is dropped at 0.5 or more): a model
// that cannot tell two good candidates apart does not undo what the
// evidence alone shows, and a model that disagrees with the evidence has
// only its own confidence. A model that always picks the first (or the
// second) candidate shown splits every pair: every score is 0.75, the
// ranking the heuristic's, the confidence the heuristic's, and the
// rationale says the choices followed the order shown. Every
// comparison's verdict is in Rounds.
//
// # Vote
//
// [Vote] asks a judge three times (or as often as told), concurrently, with
// the candidates rotated each round against position bias. A run picked by
// more than half of the rounds wins, with confidence = (its votes /
// rounds) x (the mean confidence of the rounds that picked it). Otherwise
// there is no winner and confidence is 0.
package judge
