// Package harness is the process-level plumbing shared by the Go test programs, the same
// conventions as the Java programs' Harness (integration-tests/java):
//
//   - Result lines go to stdout, one per line, written at once and never interleaved (Out).
//     The client's own log (logrus) goes to stderr.
//   - A watchdog exits with ExitTimeout after the hard timeout, so a program can never hang a
//     test, not even in a client's Shutdown.
//   - Name server addresses must be on loopback (127.0.0.0/8, localhost, [::1]).
//
// Exit codes: 0 success, 1 failure (an ERR line says why), 2 usage error, 124 hard timeout (the
// code of coreutils' timeout).
package harness

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFail    = 1
	ExitUsage   = 2
	ExitTimeout = 124
)

var outMu sync.Mutex

// Out prints one result line on stdout (os.Stdout is unbuffered: the line is written at once).
func Out(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	outMu.Lock()
	defer outMu.Unlock()
	_, _ = io.WriteString(os.Stdout, line+"\n")
}

// Flags is a flag set that reports usage errors the harness way.
type Flags struct {
	*flag.FlagSet
	program string
	usage   string
}

// NewFlags makes the flag set of program; usage is its one-line synopsis.
func NewFlags(program, usage string) *Flags {
	fs := flag.NewFlagSet(program, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Flags{FlagSet: fs, program: program, usage: usage}
}

// Parse parses os.Args[1:], or exits with ExitUsage. Both -name and --name are accepted; stray
// positional arguments are an error.
func (f *Flags) Parse() {
	if err := f.FlagSet.Parse(os.Args[1:]); err != nil {
		f.Fail(err.Error())
	}
	if f.NArg() > 0 {
		f.Fail(fmt.Sprintf("unexpected argument %q", f.Arg(0)))
	}
}

// Require exits with a usage error unless every named flag was given.
func (f *Flags) Require(names ...string) {
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, n := range names {
		if !set[n] {
			f.Fail("missing required option --" + n)
		}
	}
}

// Fail prints a usage error and exits with ExitUsage.
func (f *Flags) Fail(message string) {
	Out("ERR usage %s", OneLine(message))
	fmt.Fprintf(os.Stderr, "usage: %s %s\n", f.program, f.usage)
	os.Exit(ExitUsage)
}

// Init starts the watchdog (hard timeout from now) and sets the client's log level ("debug",
// "info", "warn", "error"; the client logs to stderr).
func Init(program string, hardTimeout time.Duration, logLevel string) {
	rlog.SetLogLevel(logLevel)
	go func() {
		time.Sleep(hardTimeout)
		Out("ERR timeout %s did not finish within %dms", program, hardTimeout.Milliseconds())
		os.Exit(ExitTimeout)
	}()
}

// CheckLoopback returns an error unless every address of a name server list ("a:p;b:p") is on
// loopback: these programs never talk to anything else.
func CheckLoopback(namesrv string) error {
	for _, addr := range strings.Split(namesrv, ";") {
		addr = strings.TrimSpace(addr)
		if addr == "" {
			continue
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("bad name server address %q: %v", addr, err)
		}
		if host == "localhost" {
			continue
		}
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("name server %q is not on loopback; tests only talk to 127.0.0.0/8", addr)
		}
	}
	return nil
}

// NamesrvList splits a name server list ("a:p;b:p") for the client's resolver.
func NamesrvList(namesrv string) []string {
	var out []string
	for _, addr := range strings.Split(namesrv, ";") {
		if addr = strings.TrimSpace(addr); addr != "" {
			out = append(out, addr)
		}
	}
	return out
}

var spaces = regexp.MustCompile(`\s+`)

// OneLine collapses every run of whitespace (newlines included) to one space.
func OneLine(s string) string {
	return strings.TrimSpace(spaces.ReplaceAllString(s, " "))
}

// Describe renders an error on one line.
func Describe(err error) string {
	if err == nil {
		return "<nil>"
	}
	return OneLine(err.Error())
}

// EscapeBody renders a message body for a result line exactly as the Java programs do:
// printable text stays, backslash, \n, \r, \t are escaped, other control characters become \xNN.
func EscapeBody(body []byte) string {
	var sb strings.Builder
	for _, c := range string(body) {
		switch {
		case c == '\\':
			sb.WriteString(`\\`)
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\r':
			sb.WriteString(`\r`)
		case c == '\t':
			sb.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, c)
		default:
			sb.WriteRune(c)
		}
	}
	return sb.String()
}

// OrDash returns s, or "-" when it is empty, so result lines keep their field count.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Exit exits with code (stdout is unbuffered, nothing to flush).
func Exit(code int) {
	os.Exit(code)
}
