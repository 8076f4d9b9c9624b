// Command selbench runs the selection benchmark (package selection)
// through a tine binary and prints, per judge, its accuracy, its accuracy
// when it merges, its abstention rate and its wrong automatic merges, with
// random choice and "smallest passing diff" beside them. Needs root, as
// fork-run does.
//
//	go run ./bench/selection/selbench -tine /tmp/tine [-tasks REGEXP] [-v] [-save FILE]
//	go run ./bench/selection/selbench -load FILE   # score saved fork-runs again
//	go run ./bench/selection/selbench -load FILE -fit judge/calibration.json
//
// Besides the judges' table it prints the heuristic's calibration: the
// expected calibration error of its raw and calibrated confidence, in
// sample and held out. -fit writes the calibration fitted on the tasks
// scored (judge.Fit over selection.FitOn) to a file, the heuristic's being
// judge/calibration.json.
//
// -load replays the judges on saved reports without running anything: a
// judge's change is measured on the same forks in a second.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/tinehq/tine/bench/selection"
	"github.com/tinehq/tine/forkrun"
)

func main() {
	bin := flag.String("tine", "tine", "the tine binary")
	only := flag.String("tasks", "", "run only the tasks whose name matches this regular expression")
	keep := flag.Bool("keep", false, "keep the scratch directory")
	verbose := flag.Bool("v", false, "print every fork's evidence")
	save := flag.String("save", "", "write the tasks' outcomes (tasks and reports) to this JSON file")
	load := flag.String("load", "", "score the outcomes of this file (from -save) instead of running tasks")
	fitTo := flag.String("fit", "", "write the heuristic's calibration fitted on the outcomes to this file")
	flag.Parse()
	if *load != "" {
		if err := rescore(*load, *fitTo); err != nil {
			fmt.Fprintln(os.Stderr, "selbench:", err)
			os.Exit(1)
		}
		return
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "selbench: -tasks:", err)
		os.Exit(2)
	}
	if err := run(*bin, re, *keep, *verbose, *save, *fitTo); err != nil {
		fmt.Fprintln(os.Stderr, "selbench:", err)
		os.Exit(1)
	}
}

func run(bin string, re *regexp.Regexp, keep, verbose bool, save, fitTo string) error {
	root, err := os.MkdirTemp("", "tine-selbench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(root)
	}
	r := &selection.Runner{Tine: bin, Home: root + "/home", Dir: root}
	var outs []*selection.Outcome
	start := time.Now()
	for _, t := range selection.Tasks() {
		if !re.MatchString(t.Name) {
			continue
		}
		t0 := time.Now()
		o, err := r.Run(context.Background(), t)
		if err != nil {
			return err
		}
		outs = append(outs, o)
		fmt.Fprintf(os.Stderr, "%s: %d forks, %.1fs, fork-run's own verdict: %s\n", t.Name, len(o.Report.Forks), time.Since(t0).Seconds(), o.Report.Winner)
		if verbose {
			for _, f := range o.Report.Forks {
				fmt.Fprintf(os.Stderr, "  %s %s (%s) tests %v lines %d: %v\n", f.Name, f.Approach, t.Kind(f.Approach), testWord(f.Test != nil && f.Test.Passed), f.LinesAdded+f.LinesDeleted, f.Evidence.Lines())
			}
			if v := o.Report.Verdict; v != nil {
				fmt.Fprintf(os.Stderr, "  verdict %.2f: %s\n", v.Confidence, v.Rationale)
			}
		}
	}
	for _, m := range selection.Mislabelled(outs) {
		fmt.Fprintln(os.Stderr, "mislabelled:", m)
	}
	fmt.Printf("%d tasks, %.0f s\n\n", len(outs), time.Since(start).Seconds())
	if save != "" {
		b, err := json.MarshalIndent(outs, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(save, b, 0o644); err != nil {
			return err
		}
	}
	return report(outs, fmt.Sprintf("the selection benchmark's %d tasks, run on %s", len(outs), time.Now().UTC().Format("2006-01-02")), fitTo)
}

// report prints the judges' figures and the heuristic's calibration, and
// writes the calibration fitted on outs to fitTo unless it is "".
func report(outs []*selection.Outcome, source, fitTo string) error {
	selection.PrintTable(os.Stdout, selection.Score(outs))
	rows, err := selection.Calibrations(outs, 0.6, forkrun.DefaultThreshold)
	if err != nil {
		return err
	}
	fmt.Printf("\nThe heuristic's calibration, expected calibration error over %d bins of equal width;\n"+
		"merges without the holdout at the old threshold 0.6 and the default %.2f:\n\n", selection.Bins, forkrun.DefaultThreshold)
	selection.PrintCalibrations(os.Stdout, rows)
	if fitTo == "" {
		return nil
	}
	c, err := selection.Fit(outs, source)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(fitTo, append(b, '\n'), 0o644)
}

// rescore scores the outcomes saved in file.
func rescore(file, fitTo string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var outs []*selection.Outcome
	if err := json.Unmarshal(b, &outs); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, m := range selection.Mislabelled(outs) {
		fmt.Fprintln(os.Stderr, "mislabelled:", m)
	}
	fmt.Printf("%d tasks (from %s)\n\n", len(outs), file)
	day := "an earlier day"
	if fi, err := os.Stat(file); err == nil {
		day = fi.ModTime().UTC().Format("2006-01-02")
	}
	return report(outs, fmt.Sprintf("the selection benchmark's %d tasks, run on %s", len(outs), day), fitTo)
}

func testWord(passed bool) string {
	if passed {
		return "passed"
	}
	return "failed"
}
