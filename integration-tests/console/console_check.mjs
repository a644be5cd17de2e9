// Drives sluice's web console (`mqadmin console`) in headless Chromium, as an operator would:
// every page, a topic created from its form, a message looked up by id and by key. Prints
// one JSON line per page with the figures it shows, saves a screenshot of each, and exits 1
// with an `ERR ...` line on the first failure.
//
//   node console_check.mjs --url http://127.0.0.1:PORT --out DIR --cluster C --topic T
//        --group G --msg-id ID --key K --new-topic NT --from-ms MS --resend-group G2
//        [--chromium /usr/bin/chromium]
import { chromium } from "playwright-core";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const need = ["url", "out", "cluster", "topic", "group", "msg-id", "key", "new-topic", "from-ms", "resend-group"];
for (const k of need) if (!args[k]) { console.log(`ERR missing --${k}`); process.exit(2); }

const say = o => console.log(JSON.stringify(o));
const num = t => Number(String(t).replace(/[^0-9.-]/g, ""));

const browser = await chromium.launch({
  executablePath: args.chromium || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", e => { say({ page: "script-error", error: String(e) }); failed = true; });
  const shot = name => page.screenshot({ path: `${args.out}/${name}.png`, fullPage: true });
  const cells = async (table, col) => page.$$eval(`#${table} tbody td[data-col="${col}"]`, tds => tds.map(td => td.textContent.trim()));

  // Cluster: every broker, its role and HA state.
  await page.goto(`${args.url}/#/cluster`);
  await page.waitForSelector("#brokers tbody td[data-col=brokerName]");
  await page.waitForTimeout(6500); // two more refreshes: the rate chart has points
  say({
    page: "cluster",
    brokers: await cells("brokers", "brokerName"),
    roles: await cells("brokers", "role"),
    ha: await cells("brokers", "ha"),
    maxOffsets: (await cells("brokers", "maxOffset")).map(num),
    chartLines: await page.$$eval("#chart-cluster polyline", p => p.length),
  });
  await shot("cluster");

  // Topics: the list, then a topic created from the form.
  await page.goto(`${args.url}/#/topics`);
  await page.waitForSelector("#topics");
  await page.fill("#create-topic input[name=topic]", args["new-topic"]);
  await page.selectOption("#create-topic select[name=cluster]", args.cluster);
  await page.fill("#create-topic input[name=readQueueNums]", "4");
  await page.fill("#create-topic input[name=writeQueueNums]", "4");
  await page.click("#create-topic button");
  await page.waitForSelector("#action-output");
  const output = await page.textContent("#action-output");
  await page.fill("#topic-filter", args["new-topic"]);
  const listed = await cells("topics", "topic");
  // The loaded topic's row: its messages (polled every 5 s) and in-rate.
  await page.fill("#topic-filter", args.topic);
  await page.waitForFunction(() => (document.querySelector('#topics td[data-col="messages"]')?.textContent ?? "") !== "");
  await page.waitForTimeout(5500); // a second poll: the rate has a figure
  const messages = (await cells("topics", "messages")).map(num);
  const inRates = await cells("topics", "inRate");
  say({ page: "topics", created: output.includes("success"), output, listed, messages, inRates });
  await shot("topics");

  // One topic: its queues and the sum of their max offsets.
  await page.goto(`${args.url}/#/topic/${encodeURIComponent(args.topic)}`);
  await page.waitForSelector("[data-figure=totalMaxOffset]");
  await page.waitForTimeout(6500);
  say({
    page: "topic",
    totalMaxOffset: num(await page.textContent("[data-figure=totalMaxOffset]")),
    queues: (await cells("queues", "queueId")).length,
    maxOffsets: (await cells("queues", "maxOffset")).map(num),
    groups: await page.textContent("#topic-groups"),
    outRate: await page.textContent("[data-figure=outRate]"),
    chartLines: await page.$$eval("#chart-topic polyline", p => p.length),
  });
  await shot("topic");

  // One group: its lag.
  await page.goto(`${args.url}/#/group/${encodeURIComponent(args.group)}`);
  await page.waitForSelector("[data-figure=diffTotal]");
  await page.waitForTimeout(6500);
  say({
    page: "group",
    diffTotal: num(await page.textContent("[data-figure=diffTotal]")),
    diffs: (await cells("progress", "diff")).map(num),
  });
  await shot("group");

  // Messages: by id (body and properties shown), then by key.
  await page.goto(`${args.url}/#/messages`);
  await page.waitForSelector("#by-id");
  await page.fill("#by-id input[name=id]", args["msg-id"]);
  await page.fill("#by-id input[name=topic]", args.topic);
  await page.click("#by-id button");
  await page.waitForSelector("#msg-body");
  const body = await page.textContent("#msg-body");
  const props = await page.$$eval("#msg-properties tbody tr", trs => trs.map(tr => [...tr.children].map(td => td.textContent)));
  say({ page: "message", body, properties: Object.fromEntries(props) });
  await shot("message");
  // ... and given again to a consumer of another group.
  await page.fill("#resend input[name=group]", args["resend-group"]);
  await page.click("#load-clients");
  await page.waitForSelector("#resend select[name=clientId] option", { state: "attached" });
  await page.click("#resend button:not([type=button])");
  await page.waitForSelector("#action-output");
  say({ page: "resend", output: await page.textContent("#action-output") });
  // By time: everything stored since --from-ms (the input is local time, the browser's zone).
  await page.goto(`${args.url}/#/messages`);
  await page.waitForSelector("#by-time");
  const from = new Date(Number(args["from-ms"]));
  const local = new Date(from.getTime() - from.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
  await page.fill("#by-time input[name=topic]", args.topic);
  await page.fill("#by-time input[name=from]", local);
  await page.click("#by-time button");
  await page.waitForSelector("#messages, #msg-body, .error");
  say({ page: "by-time", listed: await page.$$eval("#messages tbody tr", trs => trs.length) });
  await shot("messages");
  await page.fill("#by-key input[name=topic]", args.topic);
  await page.fill("#by-key input[name=key]", args.key);
  await page.click("#by-key button");
  await page.waitForSelector("#msg-body, #messages");
  say({ page: "by-key", body: (await page.$("#msg-body")) ? await page.textContent("#msg-body") : null });
} catch (e) {
  console.log(`ERR ${String(e.stack || e).split("\n").slice(0, 3).join(" | ")}`);
  failed = true;
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
