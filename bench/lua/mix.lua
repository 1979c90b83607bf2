-- mix.lua: one of the benchmark's two wrk load generators.
--
--   wrk -s mix.lua URL -- get  TOKENS_FILE ROWS    GET /events/{id},
--                                                  id uniform in 1..ROWS
--   wrk -s mix.lua URL -- post TOKENS_FILE         POST /events with the
--                                                  benchmark body
--
-- Each request carries the next token of TOKENS_FILE (one per line),
-- round-robin; every wrk thread starts at its own offset. done() prints
-- one line "BENCHJSON {...}" with the counts per status class, wrk's
-- error counters and latency percentiles (microseconds), so bench/run
-- can tell 2xx from everything else.
--
-- Closed loop by default: each connection sends its next request when
-- the previous answer arrives. Paced (open loop, wrk2's method) when
-- four more arguments follow ROWS (GET) or TOKENS_FILE (POST):
--
--   ... RATE CONNECTIONS START_US WINDOW_US
--
-- RATE is this generator's requests per second, CONNECTIONS its -c,
-- which must equal its -t: one connection per thread, because wrk's
-- hooks do not say which connection a response belongs to, and a thread
-- with one connection knows. Connection j sends at the intended times
-- START_US + j/RATE + k*CONNECTIONS/RATE (CLOCK_MONOTONIC microseconds,
-- the clock Python's time.monotonic() reads), for intended times before
-- START_US + WINDOW_US, so all connections together keep a constant
-- rate. A connection still waiting for its previous answer sends the
-- next request as soon as that answer is in, late: the latency recorded
-- runs from the intended time (from the send only if wrk's timer fired
-- early), so a stalled server shows up as latency, not as fewer requests
-- (no coordinated omission). Per thread: a latency histogram, a histogram of
-- the generator's own lag (the send's delay past the later of its
-- intended time and the moment the connection was free: that part is the
-- generator's fault, not the server's), and counts; done() merges the
-- threads' histograms and adds them to the BENCHJSON line.

local ffi = require("ffi")
ffi.cdef[[
struct cfpm_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk_id, struct cfpm_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local ts = ffi.new("struct cfpm_timespec")

local function now_us()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) * 1000000 + tonumber(ts.tv_nsec) / 1000
end

local BODY = '{"kind":"page_view","payload":{"path":"/pricing",' ..
             '"ms":182,"ref":"newsletter"}}'
-- Histogram buckets: bucket i >= 1 holds values in
-- [(1 + STEP)^(i - 1), (1 + STEP)^i) microseconds, bucket 0 those below
-- 1 us: 1 % resolution at every scale. bench/lib/load.py reads STEP from
-- the output, not from here.
local HIST_STEP = 0.01
local INV_LOG_STEP = 1 / math.log(1 + HIST_STEP)
-- An idle connection past the end of its schedule waits this long (ms):
-- wrk stops first.
local IDLE_MS = 3600000

local threads = {}

-- main state: number the threads so each starts at another token.
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local function read_lines(path)
  local out = {}
  for line in io.lines(path) do
    if #line > 0 then out[#out + 1] = line end
  end
  return out
end

local function record(h, v)
  local i = 0
  if v >= 1 then i = math.floor(math.log(v) * INV_LOG_STEP) + 1 end
  h[i] = (h[i] or 0) + 1
end

-- Paced state of this thread's one connection (rate, start_us, stop_us,
-- the histograms and counts are globals: done() reads them with get()).
local interval
local nxt            -- intended time of the next request (nil: not begun)
local cur_int, cur_sent, free_at = 0, 0, 0
local outstanding = false

-- delay() (paced only): milliseconds until the next intended time. wrk's
-- timer has millisecond resolution and may fire up to 1 ms early; the
-- latency of an early send is taken from the send, so an early timer
-- shapes the rate by less than a millisecond and shortens no latency. A
-- late one counts in the latency and in the lag.
local function paced_delay()
  if nxt == nil then nxt = start_us + tid * 1000000 / rate end
  if nxt >= stop_us then return IDLE_MS end
  local d = nxt - now_us()
  if d <= 0 then return 0 end
  return math.ceil(d / 1000)
end

-- thread state: mode, tokens, counters.
function init(args)
  mode = args[1]
  tokens = read_lines(args[2])
  local first = mode == "get" and 4 or 3
  rows = tonumber(mode == "get" and args[3] or "1000000")
  next_tok = (tid * 7919) % #tokens
  c1, c2, c3, c4, c5 = 0, 0, 0, 0, 0
  math.randomseed(os.time() * 1000 + tid * 7 + (mode == "get" and 1 or 2))
  if args[first] then
    rate = tonumber(args[first])
    interval = tonumber(args[first + 1]) * 1000000 / rate
    start_us = tonumber(args[first + 2])
    stop_us = start_us + tonumber(args[first + 3])
    paced = true
    hist, lagh = {}, {}
    sent, completed, ok, lost, busy_late = 0, 0, 0, 0, 0
    delay = paced_delay
  end
end

local function token()
  next_tok = next_tok % #tokens + 1
  return tokens[next_tok]
end

local function build()
  local auth = "Bearer " .. token()
  if mode == "get" then
    return wrk.format("GET", "/events/" .. math.random(1, rows),
                      {["Authorization"] = auth})
  end
  return wrk.format("POST", "/events",
                    {["Authorization"] = auth,
                     ["Content-Type"] = "application/json"}, BODY)
end

-- Paced bookkeeping of a send. wrk calls request() once before the run
-- to check the script (no delay() yet): that one is not a send.
local function paced_send()
  if nxt == nil then return end
  local now = now_us()
  if outstanding then lost = lost + 1 end      -- its answer never came
  cur_int, nxt = nxt, nxt + interval
  local ready = cur_int
  if free_at > ready then
    ready = free_at
    busy_late = busy_late + 1                  -- the server's delay
  end
  record(lagh, math.max(0, now - ready))
  cur_sent, outstanding, sent = now, true, sent + 1
end

function request()
  if paced then paced_send() end
  return build()
end

local function paced_response(status)
  if not outstanding then return end
  local now = now_us()
  outstanding, free_at = false, now
  record(hist, now - math.min(cur_int, cur_sent))
  completed = completed + 1
  if status >= 200 and status < 300 then ok = ok + 1 end
end

function response(status, headers, body)
  local c = math.floor(status / 100)
  if c == 2 then c2 = c2 + 1
  elseif c == 4 then c4 = c4 + 1
  elseif c == 5 then c5 = c5 + 1
  elseif c == 3 then c3 = c3 + 1
  else c1 = c1 + 1 end
  if paced then paced_response(status) end
end

-- main state: the threads' histograms merged, as a JSON object.
local function merged(name)
  local sum = {}
  for _, t in ipairs(threads) do
    for i, n in pairs(t:get(name) or {}) do sum[i] = (sum[i] or 0) + n end
  end
  local parts = {}
  for i, n in pairs(sum) do
    parts[#parts + 1] = string.format('"%d":%d', i, n)
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function total(name)
  local n = 0
  for _, t in ipairs(threads) do n = n + (t:get(name) or 0) end
  return n
end

local function paced_json()
  if not threads[1]:get("paced") then return "" end
  return string.format(
    ',"paced":{"rate":%.3f,"connections":%d,"start_us":%.0f,' ..
    '"window_us":%.0f,"sent":%d,"completed":%d,"ok":%d,"lost":%d,' ..
    '"busy_late":%d,"hist_step":%g,"latency_hist":%s,"lag_hist":%s}',
    threads[1]:get("rate"), #threads, threads[1]:get("start_us"),
    threads[1]:get("stop_us") - threads[1]:get("start_us"), total("sent"),
    total("completed"), total("ok"), total("lost"), total("busy_late"),
    HIST_STEP, merged("hist"), merged("lagh"))
end

-- main state: sum the threads' counters, print one JSON line.
function done(summary, latency, requests)
  local n = {0, 0, 0, 0, 0}
  for _, t in ipairs(threads) do
    for i = 1, 5 do n[i] = n[i] + (t:get("c" .. i) or 0) end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"mode":"%s","duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"status":{"1xx":%d,"2xx":%d,"3xx":%d,"4xx":%d,"5xx":%d},' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,' ..
    '"timeout":%d},"latency_us":{"p50":%d,"p90":%d,"p99":%d,' ..
    '"max":%d,"mean":%.1f}%s}\n',
    threads[1]:get("mode"), summary.duration, summary.requests,
    summary.bytes, n[1], n[2], n[3], n[4], n[5], e.connect, e.read,
    e.write, e.status, e.timeout, latency:percentile(50),
    latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean, paced_json()))
end
