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

local BODY = '{"kind":"page_view","payload":{"path":"/pricing",' ..
             '"ms":182,"ref":"newsletter"}}'

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

-- thread state: mode, tokens, counters.
function init(args)
  mode = args[1]
  tokens = read_lines(args[2])
  rows = tonumber(args[3] or "1000000")
  next_tok = (tid * 7919) % #tokens
  c1, c2, c3, c4, c5 = 0, 0, 0, 0, 0
  math.randomseed(os.time() * 1000 + tid * 7 + (mode == "get" and 1 or 2))
end

local function token()
  next_tok = next_tok % #tokens + 1
  return tokens[next_tok]
end

function request()
  local auth = "Bearer " .. token()
  if mode == "get" then
    return wrk.format("GET", "/events/" .. math.random(1, rows),
                      {["Authorization"] = auth})
  end
  return wrk.format("POST", "/events",
                    {["Authorization"] = auth,
                     ["Content-Type"] = "application/json"}, BODY)
end

function response(status, headers, body)
  local c = math.floor(status / 100)
  if c == 2 then c2 = c2 + 1
  elseif c == 4 then c4 = c4 + 1
  elseif c == 5 then c5 = c5 + 1
  elseif c == 3 then c3 = c3 + 1
  else c1 = c1 + 1 end
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
    '"max":%d,"mean":%.1f}}\n',
    threads[1]:get("mode"), summary.duration, summary.requests,
    summary.bytes, n[1], n[2], n[3], n[4], n[5], e.connect, e.read,
    e.write, e.status, e.timeout, latency:percentile(50),
    latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean))
end
