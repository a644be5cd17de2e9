// Command grpc-client runs one case of the gRPC proxy tests (integration-tests/tests/grpc_proxy.rs)
// on Apache's official Go gRPC SDK (github.com/apache/rocketmq-clients/golang/v5), as
// ../README.md describes them for every SDK: the same arguments, messages and result lines.
//
//	grpc-client CASE --endpoint 127.0.0.1:PORT --topic T --group G [--timeout-ms 120000] [--consume no] [--access-key AK --secret-key SK]
//	  CASE: normal | fifo | delay | transaction | simple | push | priority
//
// --consume no: the cases that send and then consume (normal, fifo, delay) only send, and print
// "OK sent=N" once every send succeeded (the test reads the messages back).
//
// Exit 0 once the case saw everything it waits for (an OK line), 1 on failure (ERR ...), 2 on a
// usage error, 124 when the watchdog fires.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

// invisible is the SimpleConsumer's invisible duration: the proxy's minimum for a receive is 10 s.
const invisible = 10 * time.Second

// wait is how long a case waits for its deliveries.
const wait = 60 * time.Second

var out = struct {
	sync.Mutex
}{}

// line prints one result line on stdout.
func line(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

func nowMs() int64 { return time.Now().UnixMilli() }

type client struct {
	cfg   *rmq.Config
	topic string
	group string
	// consume: whether the send-then-consume cases consume (--consume, yes by default).
	consume bool
}

func main() {
	if len(os.Args) < 2 {
		usage("missing CASE")
	}
	kase := os.Args[1]
	fs := flag.NewFlagSet("grpc-client", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "proxy gRPC address")
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "consumer group")
	timeoutMs := fs.Int64("timeout-ms", 120000, "hard timeout")
	consume := fs.String("consume", "yes", "yes: consume what was sent; no: only send")
	accessKey := fs.String("access-key", "", "sign calls as this user (with --secret-key)")
	secretKey := fs.String("secret-key", "", "the user's secret key")
	if err := fs.Parse(os.Args[2:]); err != nil || fs.NArg() != 0 {
		usage(fmt.Sprint("bad arguments ", os.Args[2:]))
	}
	if !strings.HasPrefix(*endpoint, "127.") {
		usage("--endpoint must be a loopback address")
	}
	if *topic == "" || *group == "" {
		usage("--topic and --group are required")
	}
	if *consume != "yes" && *consume != "no" {
		usage("--consume must be yes or no")
	}
	go func() {
		time.Sleep(time.Duration(*timeoutMs) * time.Millisecond)
		line("ERR timeout after %dms", *timeoutMs)
		os.Exit(124)
	}()
	// The SDK logs to $HOME/logs/rocketmq (the test gives each run its own HOME), never stdout.
	os.Setenv(rmq.ENABLE_CONSOLE_APPENDER, "false")
	rmq.ResetLogger()
	c := &client{
		cfg: &rmq.Config{
			Endpoint:      *endpoint,
			ConsumerGroup: *group,
			Credentials:   &credentials.SessionCredentials{AccessKey: *accessKey, AccessSecret: *secretKey},
		},
		topic:   *topic,
		group:   *group,
		consume: *consume == "yes",
	}
	var err error
	switch kase {
	case "normal":
		err = c.normal()
	case "fifo":
		err = c.fifo()
	case "delay":
		err = c.delay()
	case "transaction":
		err = c.transaction()
	case "simple":
		err = c.simple()
	case "push":
		err = c.push()
	case "priority":
		err = c.priority()
	default:
		usage("unknown case " + kase)
	}
	if err != nil {
		line("ERR %s", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
	os.Exit(0)
}

func usage(why string) {
	line("ERR usage: %s", why)
	os.Exit(2)
}

// ---------------------------------------------------------------------------------- the cases

// normal: 8 messages with a tag, keys and a property; a SimpleConsumer receives and acks them.
func (c *client) normal() error {
	p, err := c.producer(nil)
	if err != nil {
		return err
	}
	var bodies []string
	for i := 0; i < 8; i++ {
		body := fmt.Sprintf("normal-%d", i)
		m := c.message(body)
		m.SetTag("TagA")
		m.SetKeys(fmt.Sprintf("key-%d", i))
		m.AddProperty("idx", strconv.Itoa(i))
		if err := c.send(p, i, m, ""); err != nil {
			return err
		}
		bodies = append(bodies, body)
	}
	p.GracefulStop()
	return c.consumeAll(bodies, "TagA", 0)
}

// fifo: 3 message groups of 4, interleaved; received and acked in the order given.
func (c *client) fifo() error {
	p, err := c.producer(nil)
	if err != nil {
		return err
	}
	var bodies []string
	i := 0
	for j := 0; j < 4; j++ {
		for g := 0; g < 3; g++ {
			body := fmt.Sprintf("fifo-%d-%d", g, j)
			m := c.message(body)
			m.SetMessageGroup(fmt.Sprintf("group-%d", g))
			if err := c.send(p, i, m, ""); err != nil {
				return err
			}
			i++
			bodies = append(bodies, body)
		}
	}
	p.GracefulStop()
	return c.consumeAll(bodies, "*", 0)
}

// delay: 3 messages due 4, 5 and 6 s after the send.
func (c *client) delay() error {
	p, err := c.producer(nil)
	if err != nil {
		return err
	}
	var bodies []string
	for i := 0; i < 3; i++ {
		body := fmt.Sprintf("delay-%d", i)
		due := time.Now().Add(4*time.Second + time.Duration(i)*time.Second)
		m := c.message(body)
		m.SetDelayTimestamp(due)
		if err := c.send(p, i, m, fmt.Sprintf(" deliver=%d", due.UnixMilli())); err != nil {
			return err
		}
		bodies = append(bodies, body)
	}
	p.GracefulStop()
	return c.consumeAll(bodies, "*", 0)
}

// transaction: 6 messages, i%3 == 0 committed, 1 rolled back, 2 left open; a check-back answers
// the local outcome (COMMIT for the open ones); the consumer receives the 4 committed ones and
// lingers 3 s.
func (c *client) transaction() error {
	var mu sync.Mutex
	checked := map[string]bool{}
	p, err := c.producer(&rmq.TransactionChecker{
		Check: func(mv *rmq.MessageView) rmq.TransactionResolution {
			body := string(mv.GetBody())
			mu.Lock()
			checked[body] = true
			mu.Unlock()
			if strings.HasSuffix(body, "-1") || strings.HasSuffix(body, "-4") {
				line("CHECK %s %s answer=ROLLBACK", body, mv.GetMessageId())
				return rmq.ROLLBACK
			}
			line("CHECK %s %s answer=COMMIT", body, mv.GetMessageId())
			return rmq.COMMIT
		},
	})
	if err != nil {
		return err
	}
	defer p.GracefulStop()
	var expected []string
	for i := 0; i < 6; i++ {
		body := fmt.Sprintf("tx-%d", i)
		tx := p.BeginTransaction()
		r, err := p.SendWithTransaction(context.Background(), c.message(body), tx)
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		local := []string{"commit", "rollback", "unknown"}[i%3]
		line("SENT %d %s at=%d tx=%s", i, r[0].MessageID, nowMs(), local)
		switch i % 3 {
		case 0:
			err = tx.Commit()
		case 1:
			err = tx.RollBack()
		}
		if err != nil {
			return fmt.Errorf("end %d: %w", i, err)
		}
		if i%3 != 1 {
			expected = append(expected, body)
		}
	}
	if err := c.consumeAll(expected, "*", 3*time.Second); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		mu.Lock()
		both := checked["tx-2"] && checked["tx-5"]
		mu.Unlock()
		if both {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("checked=%v expected tx-2 and tx-5", checked)
}

// simple: 3 messages received; simple-0 acked, simple-1's invisible duration changed to 2 s,
// simple-2 left alone; both come back (attempt 2) and are acked; then 2 s more with nothing.
func (c *client) simple() error {
	p, err := c.producer(nil)
	if err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		if err := c.send(p, i, c.message(fmt.Sprintf("simple-%d", i)), ""); err != nil {
			return err
		}
	}
	p.GracefulStop()
	sc, err := c.simpleConsumer("*")
	if err != nil {
		return err
	}
	defer sc.GracefulStop()
	seen := map[string]int{}
	deadline := time.Now().Add(wait)
	var lingerUntil time.Time
	for time.Now().Before(deadline) && (lingerUntil.IsZero() || time.Now().Before(lingerUntil)) {
		for _, mv := range receive(sc) {
			body := string(mv.GetBody())
			recv(mv)
			seen[body]++
			n := seen[body]
			switch {
			case body == "simple-1" && n == 1:
				if err := sc.ChangeInvisibleDuration(mv, 2*time.Second); err != nil {
					return fmt.Errorf("change invisible duration: %w", err)
				}
				line("CHANGE %s %s ms=2000 at=%d", body, mv.GetMessageId(), nowMs())
			case body == "simple-2" && n == 1:
				line("SKIP %s %s", body, mv.GetMessageId())
			default:
				if err := ack(sc, mv); err != nil {
					return err
				}
			}
		}
		if lingerUntil.IsZero() && seen["simple-0"] >= 1 && seen["simple-1"] >= 2 && seen["simple-2"] >= 2 {
			lingerUntil = time.Now().Add(2 * time.Second)
		}
	}
	if lingerUntil.IsZero() {
		return fmt.Errorf("seen=%v", seen)
	}
	line("OK seen=%v", seen)
	return nil
}

// push: a PushConsumer started first; 5 messages; push-0 fails its first delivery and must come
// back; every message consumed successfully once.
func (c *client) push() error {
	var mu sync.Mutex
	done := map[string]bool{}
	failed := false
	pc, err := rmq.NewPushConsumer(c.cfg,
		rmq.WithPushAwaitDuration(5*time.Second),
		rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{c.topic: rmq.SUB_ALL}),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{
			Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
				body := string(mv.GetBody())
				recv(mv)
				mu.Lock()
				defer mu.Unlock()
				if body == "push-0" && !failed {
					failed = true
					line("FAIL %s %s", body, mv.GetMessageId())
					return rmq.FAILURE
				}
				done[body] = true
				return rmq.SUCCESS
			},
		}),
	)
	if err != nil {
		return fmt.Errorf("push consumer: %w", err)
	}
	if err := pc.Start(); err != nil {
		return fmt.Errorf("push consumer start: %w", err)
	}
	defer pc.GracefulStop()
	line("STARTED %s", c.group)
	time.Sleep(2 * time.Second)
	p, err := c.producer(nil)
	if err != nil {
		return err
	}
	for i := 0; i < 5; i++ {
		if err := c.send(p, i, c.message(fmt.Sprintf("push-%d", i)), ""); err != nil {
			return err
		}
	}
	p.GracefulStop()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(done)
		mu.Unlock()
		if n >= 5 {
			time.Sleep(2 * time.Second)
			line("OK consumed=%d", n)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("consumed=%d expected=5", len(done))
}

// priority: a backlog of 16 priority messages, 4 rounds of priorities 0..3 (`prio-P-R`), sent
// before the SimpleConsumer starts; it receives and acks them all (the test checks that the
// higher priorities came first). The SDK's MessageView has no priority: RECV prints "-".
func (c *client) priority() error {
	p, err := c.producer(nil)
	if err != nil {
		return err
	}
	var bodies []string
	i := 0
	for r := 0; r < 4; r++ {
		for prio := int32(0); prio < 4; prio++ {
			body := fmt.Sprintf("prio-%d-%d", prio, r)
			m := c.message(body)
			if err := m.SetPriority(prio); err != nil {
				return err
			}
			if err := c.send(p, i, m, fmt.Sprintf(" priority=%d", prio)); err != nil {
				return err
			}
			i++
			bodies = append(bodies, body)
		}
	}
	p.GracefulStop()
	return c.consumeAll(bodies, "*", 0)
}

// ---------------------------------------------------------------------------------- the parts

func (c *client) producer(checker *rmq.TransactionChecker) (rmq.Producer, error) {
	opts := []rmq.ProducerOption{rmq.WithTopics(c.topic)}
	if checker != nil {
		opts = append(opts, rmq.WithTransactionChecker(checker))
	}
	p, err := rmq.NewProducer(c.cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("producer start: %w", err)
	}
	return p, nil
}

func (c *client) message(body string) *rmq.Message {
	return &rmq.Message{Topic: c.topic, Body: []byte(body)}
}

func (c *client) send(p rmq.Producer, i int, m *rmq.Message, extra string) error {
	r, err := p.Send(context.Background(), m)
	if err != nil {
		return fmt.Errorf("send %d: %w", i, err)
	}
	line("SENT %d %s at=%d%s", i, r[0].MessageID, nowMs(), extra)
	return nil
}

func (c *client) simpleConsumer(tag string) (rmq.SimpleConsumer, error) {
	sc, err := rmq.NewSimpleConsumer(c.cfg,
		rmq.WithSimpleAwaitDuration(5*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{c.topic: rmq.NewFilterExpression(tag)}),
	)
	if err != nil {
		return nil, fmt.Errorf("simple consumer: %w", err)
	}
	if err := sc.Start(); err != nil {
		return nil, fmt.Errorf("simple consumer start: %w", err)
	}
	return sc, nil
}

// receive is one receive call; "no message" is none, and so is a failed one, which prints
// RECVERR <error> (the test fails on it).
func receive(sc rmq.SimpleConsumer) []*rmq.MessageView {
	mvs, err := sc.Receive(context.Background(), 16, invisible)
	if err != nil {
		if !strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
			line("RECVERR %s", strings.ReplaceAll(err.Error(), "\n", " "))
			time.Sleep(200 * time.Millisecond)
		}
		return nil
	}
	return mvs
}

// consumeAll receives and acks (in order) until every body came, then linger more.
func (c *client) consumeAll(bodies []string, tag string, linger time.Duration) error {
	if !c.consume {
		line("OK sent=%d", len(bodies))
		return nil
	}
	sc, err := c.simpleConsumer(tag)
	if err != nil {
		return err
	}
	defer sc.GracefulStop()
	got := map[string]bool{}
	missing := func() []string {
		var m []string
		for _, b := range bodies {
			if !got[b] {
				m = append(m, b)
			}
		}
		sort.Strings(m)
		return m
	}
	deadline := time.Now().Add(wait)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		for _, mv := range receive(sc) {
			got[string(mv.GetBody())] = true
			recv(mv)
			if err := ack(sc, mv); err != nil {
				return err
			}
		}
	}
	until := time.Now().Add(linger)
	for linger > 0 && time.Now().Before(until) {
		for _, mv := range receive(sc) {
			got[string(mv.GetBody())] = true
			recv(mv)
			if err := ack(sc, mv); err != nil {
				return err
			}
		}
	}
	if m := missing(); len(m) > 0 {
		return fmt.Errorf("missing=%v", m)
	}
	line("OK received=%d", len(got))
	return nil
}

func ack(sc rmq.SimpleConsumer, mv *rmq.MessageView) error {
	if err := sc.Ack(context.Background(), mv); err != nil {
		return fmt.Errorf("ack %s: %w", mv.GetMessageId(), err)
	}
	line("ACK %s %s", mv.GetBody(), mv.GetMessageId())
	return nil
}

// recv prints `RECV <body> <msgId> attempt= tag= keys= group= deliver= born= recv= topic= idx=`.
func recv(mv *rmq.MessageView) {
	tag, group, deliver, born := "-", "-", "-", "-"
	if t := mv.GetTag(); t != nil && *t != "" {
		tag = *t
	}
	if g := mv.GetMessageGroup(); g != nil && *g != "" {
		group = *g
	}
	if d := mv.GetDeliveryTimestamp(); d != nil && !d.IsZero() {
		deliver = strconv.FormatInt(d.UnixMilli(), 10)
	}
	if b := mv.GetBornTimestamp(); b != nil {
		born = strconv.FormatInt(b.UnixMilli(), 10)
	}
	keys := "-"
	if k := mv.GetKeys(); len(k) > 0 {
		keys = strings.Join(k, ",")
	}
	idx := "-"
	if v, ok := mv.GetProperties()["idx"]; ok {
		idx = v
	}
	line("RECV %s %s attempt=%d tag=%s keys=%s group=%s deliver=%s born=%s recv=%d topic=%s idx=%s",
		mv.GetBody(), mv.GetMessageId(), mv.GetDeliveryAttempt(), tag, keys, group, deliver, born,
		nowMs(), mv.GetTopic(), idx)
}
