package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A passing test's output is dropped, a failing one's printed; package
// lines pass through but a bare PASS; the slowest tests are listed, the
// slowest first, without subtests.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: broke\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"sub said\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestB/sub","Elapsed":9}`,
		`{"Action":"fail","Package":"p","Test":"TestB","Elapsed":3.25}`,
		`{"Action":"output","Package":"p","Output":"PASS\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t4.1s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":4.1}`,
		`{"Action":"output","Package":"q","Output":"ok  \tq\t0.5s\n"}`,
		`{"Action":"pass","Package":"q","Elapsed":0.5}`,
	}, "\n")
	var out strings.Builder
	failed, err := report(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v: want failed, no error", failed, err)
	}
	want := "    b_test.go:9: broke\nFAIL\tp\t4.1s\nok  \tq\t0.5s\n\nslowest tests of 2:\n     3.2s  p.TestB\n     1.5s  p.TestA\n"
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A build failure fails the run, and its output is shown.
func TestReportBuildFailure(t *testing.T) {
	in := `{"ImportPath":"p","Action":"build-output","Output":"p/x.go:1:1: oops\n"}` + "\n" +
		`{"ImportPath":"p","Action":"build-fail"}` + "\n"
	var out strings.Builder
	failed, err := report(strings.NewReader(in), &out)
	if err != nil || !failed || !strings.Contains(out.String(), "oops") {
		t.Fatalf("failed %v, err %v, out %q", failed, err, out.String())
	}
}
