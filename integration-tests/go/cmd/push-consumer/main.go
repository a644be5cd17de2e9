// Command push-consumer consumes with rocketmq-client-go's push consumer (concurrently) and prints
// what it receives.
//
//	push-consumer --namesrv 127.0.0.1:9876 --topic T --group G --count 10 [--expr '*']
//	              [--from first|last] [--broadcast] [--props] [--wait-ms 30000]
//	              [--timeout-ms MS] [--log-level warn]
//
// Prints, on stdout:
//
//	STARTED <group>                                          once the consumer has started
//	RECV <msgId> <queueId> <queueOffset> <body>              one per delivery (body escaped)
//	PROPS <msgId> topic=<t> tags=<t> keys=<k> reconsume=<n> offsetMsgId=<id>   with --props
//	OK received=<n>                                          exit 0
//
// It exits as soon as --count deliveries arrived (duplicates count), or after --wait-ms: with
// fewer than --count deliveries then, it prints "ERR received=<n> expected=<count>" and exits 1.
// --count 0 consumes for the whole wait and exits 0. The same lines as the Java PushConsumer.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"sluice/integration-tests/go/internal/harness"
)

const usage = "--namesrv HOST:PORT --topic TOPIC --group G --count N [--expr EXPR] [--from first|last]" +
	" [--broadcast] [--props] [--wait-ms MS] [--timeout-ms MS] [--log-level LEVEL]"

func main() {
	f := harness.NewFlags("push-consumer", usage)
	namesrv := f.String("namesrv", "", "name server list")
	topic := f.String("topic", "", "topic")
	group := f.String("group", "", "consumer group")
	count := f.Int("count", 0, "deliveries to wait for (0: the whole wait)")
	expr := f.String("expr", "*", "tag expression")
	from := f.String("from", "first", "first or last")
	broadcast := f.Bool("broadcast", false, "broadcasting instead of clustering")
	props := f.Bool("props", false, "print a PROPS line after each RECV")
	waitMs := f.Int64("wait-ms", 30000, "how long to wait for --count deliveries")
	timeoutMs := f.Int64("timeout-ms", 0, "hard timeout (default: wait + 20 s)")
	logLevel := f.String("log-level", "warn", "client log level")
	f.Parse()
	f.Require("namesrv", "topic", "group", "count")
	if err := harness.CheckLoopback(*namesrv); err != nil {
		f.Fail(err.Error())
	}
	if *from != "first" && *from != "last" {
		f.Fail("--from wants first or last, got " + *from)
	}
	wait := time.Duration(*waitMs) * time.Millisecond
	hard := time.Duration(*timeoutMs) * time.Millisecond
	if hard <= 0 {
		hard = wait + 20*time.Second
	}
	harness.Init("push-consumer", hard, *logLevel)

	where := consumer.ConsumeFromFirstOffset
	if *from == "last" {
		where = consumer.ConsumeFromLastOffset
	}
	model := consumer.Clustering
	if *broadcast {
		model = consumer.BroadCasting
	}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver(harness.NamesrvList(*namesrv))),
		consumer.WithGroupName(*group),
		consumer.WithInstance(fmt.Sprintf("push-consumer-%d", os.Getpid())),
		consumer.WithVIPChannel(false),
		consumer.WithConsumeFromWhere(where),
		consumer.WithConsumerModel(model),
	)
	if err != nil {
		harness.Out("ERR start %s", harness.Describe(err))
		harness.Exit(harness.ExitFail)
	}
	harness.Exit(run(c, *topic, *group, *expr, *count, *props, wait))
}

func run(c rocketmq.PushConsumer, topic, group, expr string, count int, props bool, wait time.Duration) int {
	var (
		received atomic.Int64
		doneOnce sync.Once
		done     = make(chan struct{})
	)
	listener := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			var sb strings.Builder
			fmt.Fprintf(&sb, "RECV %s %d %d %s", m.MsgId, m.Queue.QueueId, m.QueueOffset, harness.EscapeBody(m.Body))
			if props {
				fmt.Fprintf(&sb, "\nPROPS %s topic=%s tags=%s keys=%s reconsume=%d offsetMsgId=%s", m.MsgId, m.Topic,
					harness.OrDash(m.GetTags()), harness.OrDash(m.GetKeys()), m.ReconsumeTimes, m.OffsetMsgId)
			}
			harness.Out("%s", sb.String())
			if n := received.Add(1); count > 0 && n >= int64(count) {
				doneOnce.Do(func() { close(done) })
			}
		}
		return consumer.ConsumeSuccess, nil
	}
	err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr}, listener)
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		harness.Out("ERR start %s", harness.Describe(err))
		return harness.ExitFail
	}
	harness.Out("STARTED %s", group)
	select {
	case <-done:
	case <-time.After(wait):
	}
	_ = c.Shutdown()
	n := received.Load()
	if count > 0 && n < int64(count) {
		harness.Out("ERR received=%d expected=%d", n, count)
		return harness.ExitFail
	}
	harness.Out("OK received=%d", n)
	return harness.ExitOK
}
