// Command producer sends N messages with rocketmq-client-go's default producer.
//
//	producer --namesrv 127.0.0.1:9876 --topic T --count 10 [--group G] [--tag TAG]
//	         [--keys-prefix K] [--body-prefix B] [--mode sync|async|oneway] [--batch]
//	         [--batch-size N] [--send-timeout-ms 3000] [--retries 2] [--keep-going]
//	         [--linger-ms 0] [--timeout-ms MS] [--log-level warn]
//
// Message i (from 0) has body <body-prefix>-<i>, key <keys-prefix>-<i> (when a prefix is given)
// and the tag (when given). Prints, on stdout:
//
//	SENT <msgId> <offsetMsgId> <queueId> <queueOffset> <sendStatus>   one per message
//	OK sent=<n>                                                       exit 0
//
// --mode sync (default) sends one message at a time and prints in order; async starts every send
// at once and prints each result as it completes; oneway prints no SENT lines (there is no
// result). --batch sends the messages as batches of --batch-size (default: all of them) with one
// call each (SEND_BATCH_MESSAGE): each message of a batch gets its own SENT line, with the
// batch's queue id, queueOffset = the batch's first offset + its index, its share of the
// comma-separated offset msg ids, and "-" for a msgId the client did not report (the Go client
// sets no UNIQ_KEY on batched messages). A failed send prints "ERR send <i> <error>" and stops
// (exit 1), or with --keep-going goes on and ends with "ERR sent=<ok> failed=<n>" (exit 1). A
// status other than SEND_OK is printed as is and does not count as a failure.
//
// --linger-ms waits that long after the last send before shutting the producer down. The Go client
// sends "oneway" requests without the remoting oneway flag, so the broker answers them; when an
// answer reaches a connection the client has already closed, the client's kernel resets it and
// drops whatever it had not transmitted yet (see README.md). Lingering lets those answers arrive
// while the connection is still open.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"sluice/integration-tests/go/internal/harness"
)

const usage = "--namesrv HOST:PORT --topic TOPIC --count N [--group G] [--tag TAG] [--keys-prefix K]" +
	" [--body-prefix B] [--mode sync|async|oneway] [--batch] [--batch-size N] [--send-timeout-ms MS]" +
	" [--retries N] [--keep-going] [--linger-ms MS] [--timeout-ms MS] [--log-level LEVEL]"

type options struct {
	namesrv, topic, group, tag, keysPrefix, bodyPrefix, mode string
	count, batchSize, retries                                int
	batch, keepGoing                                         bool
	sendTimeout, linger                                      time.Duration
}

func main() {
	f := harness.NewFlags("producer", usage)
	var o options
	f.StringVar(&o.namesrv, "namesrv", "", "name server list")
	f.StringVar(&o.topic, "topic", "", "topic")
	f.IntVar(&o.count, "count", 0, "messages to send")
	f.StringVar(&o.group, "group", "sluice_it_go_producer", "producer group")
	f.StringVar(&o.tag, "tag", "", "tag of every message")
	f.StringVar(&o.keysPrefix, "keys-prefix", "", "key prefix")
	f.StringVar(&o.bodyPrefix, "body-prefix", "msg", "body prefix")
	f.StringVar(&o.mode, "mode", "sync", "sync, async or oneway")
	f.BoolVar(&o.batch, "batch", false, "send batches")
	f.IntVar(&o.batchSize, "batch-size", 0, "messages per batch (default: all)")
	sendTimeoutMs := f.Int64("send-timeout-ms", 3000, "send timeout")
	f.IntVar(&o.retries, "retries", 2, "retries of a failed sync/oneway send")
	f.BoolVar(&o.keepGoing, "keep-going", false, "go on after a failed send")
	lingerMs := f.Int64("linger-ms", 0, "wait after the last send before shutting down")
	timeoutMs := f.Int64("timeout-ms", 0, "hard timeout")
	logLevel := f.String("log-level", "warn", "client log level")
	f.Parse()
	f.Require("namesrv", "topic", "count")
	if err := harness.CheckLoopback(o.namesrv); err != nil {
		f.Fail(err.Error())
	}
	if o.mode != "sync" && o.mode != "async" && o.mode != "oneway" {
		f.Fail("--mode wants sync, async or oneway, got " + o.mode)
	}
	if o.count < 0 || o.batchSize < 0 {
		f.Fail("--count and --batch-size must not be negative")
	}
	if o.batchSize == 0 || !o.batch {
		o.batchSize = o.count
	}
	if !o.batch {
		o.batchSize = 1
	}
	o.sendTimeout = time.Duration(*sendTimeoutMs) * time.Millisecond
	o.linger = time.Duration(*lingerMs) * time.Millisecond
	hard := time.Duration(*timeoutMs) * time.Millisecond
	if hard <= 0 {
		hard = 30*time.Second + time.Duration(o.count)*o.sendTimeout + o.linger
	}
	harness.Init("producer", hard, *logLevel)
	harness.Exit(run(&o))
}

func run(o *options) int {
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver(harness.NamesrvList(o.namesrv))),
		producer.WithGroupName(o.group),
		producer.WithInstanceName(fmt.Sprintf("producer-%d", os.Getpid())),
		producer.WithVIPChannel(false),
		producer.WithSendMsgTimeout(o.sendTimeout),
		producer.WithRetry(o.retries),
	)
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		harness.Out("ERR start %s", harness.Describe(err))
		return harness.ExitFail
	}
	defer func() { _ = p.Shutdown() }()

	var failed int
	switch o.mode {
	case "sync":
		failed = sendSync(p, o)
	case "async":
		failed = sendAsync(p, o)
	case "oneway":
		failed = sendOneWay(p, o)
	}
	time.Sleep(o.linger)
	if failed < 0 {
		return harness.ExitFail
	}
	if failed > 0 {
		harness.Out("ERR sent=%d failed=%d", o.count-failed, failed)
		return harness.ExitFail
	}
	harness.Out("OK sent=%d", o.count)
	return harness.ExitOK
}

func message(o *options, i int) *primitive.Message {
	m := primitive.NewMessage(o.topic, []byte(fmt.Sprintf("%s-%d", o.bodyPrefix, i)))
	if o.tag != "" {
		m.WithTag(o.tag)
	}
	if o.keysPrefix != "" {
		m.WithKeys([]string{fmt.Sprintf("%s-%d", o.keysPrefix, i)})
	}
	return m
}

// batches yields [first, end) index ranges of the sends to make.
func batches(o *options) [][2]int {
	var out [][2]int
	for first := 0; first < o.count; first += o.batchSize {
		end := first + o.batchSize
		if end > o.count {
			end = o.count
		}
		out = append(out, [2]int{first, end})
	}
	return out
}

func messages(o *options, b [2]int) []*primitive.Message {
	msgs := make([]*primitive.Message, 0, b[1]-b[0])
	for i := b[0]; i < b[1]; i++ {
		msgs = append(msgs, message(o, i))
	}
	return msgs
}

func statusName(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	default:
		return fmt.Sprintf("UNKNOWN_%d", int(s))
	}
}

// printResult prints one SENT line per message of a send of n messages.
func printResult(r *primitive.SendResult, n int) {
	msgIDs := strings.Split(r.MsgID, ",")
	offsetIDs := strings.Split(r.OffsetMsgID, ",")
	queueID := -1
	if r.MessageQueue != nil {
		queueID = r.MessageQueue.QueueId
	}
	for j := 0; j < n; j++ {
		var msgID, offsetID string
		if j < len(msgIDs) {
			msgID = msgIDs[j]
		}
		if j < len(offsetIDs) {
			offsetID = offsetIDs[j]
		}
		harness.Out("SENT %s %s %d %d %s", harness.OrDash(msgID), harness.OrDash(offsetID), queueID,
			r.QueueOffset+int64(j), statusName(r.Status))
	}
}

func sendSync(p rocketmq.Producer, o *options) int {
	failed := 0
	for _, b := range batches(o) {
		ctx, cancel := context.WithTimeout(context.Background(), o.sendTimeout*time.Duration(1+o.retries))
		r, err := p.SendSync(ctx, messages(o, b)...)
		cancel()
		if err != nil {
			harness.Out("ERR send %d %s", b[0], harness.Describe(err))
			failed += b[1] - b[0]
			if !o.keepGoing {
				return -1
			}
			continue
		}
		printResult(r, b[1]-b[0])
	}
	return failed
}

func sendAsync(p rocketmq.Producer, o *options) int {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	fail := func(first, n int, err error) {
		harness.Out("ERR send %d %s", first, harness.Describe(err))
		mu.Lock()
		failed += n
		mu.Unlock()
	}
	for _, b := range batches(o) {
		first, n := b[0], b[1]-b[0]
		wg.Add(1)
		err := p.SendAsync(context.Background(), func(_ context.Context, r *primitive.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				fail(first, n, err)
				return
			}
			printResult(r, n)
		}, messages(o, b)...)
		if err != nil {
			wg.Done()
			fail(first, n, err)
		}
	}
	// Every callback runs once its send timeout passed; the watchdog guards the rest.
	wg.Wait()
	if failed > 0 && !o.keepGoing {
		return -1
	}
	return failed
}

func sendOneWay(p rocketmq.Producer, o *options) int {
	failed := 0
	for _, b := range batches(o) {
		ctx, cancel := context.WithTimeout(context.Background(), o.sendTimeout*time.Duration(1+o.retries))
		err := p.SendOneWay(ctx, messages(o, b)...)
		cancel()
		if err != nil {
			harness.Out("ERR send %d %s", b[0], harness.Describe(err))
			failed += b[1] - b[0]
			if !o.keepGoing {
				return -1
			}
		}
	}
	return failed
}
