-- wrk script for the contactd benchmark. Configured by environment variables:
--   BENCH_METHOD, BENCH_PATH, BENCH_BODY  the request (BENCH_BODY empty: no body)
--   BENCH_ADDR  "none" | "v4" | "v6": X-Forwarded-For per request, a new address every time
--               (v4: PREFIX.x.y.z; v6: 2001:db8:PREFIX::x:y, all in one /64)
--   BENCH_PREFIX  first octet (v4) or third group (v6), so cases never share addresses
--   BENCH_LIMIT   stop after this many requests (0: run for the duration)
-- done() prints one JSON line for the driver.
--
-- wrk and the server share the machine's two cores, so the generator must be cheap: each
-- request is one concatenation of a fixed head, the address and a fixed tail, not a
-- wrk.format() call (a table, a string.format per header, a join), which kept wrk's core
-- busy and capped the per-request cases below what the server could answer.
local method = os.getenv("BENCH_METHOD") or "GET"
local path = os.getenv("BENCH_PATH") or "/"
local body = os.getenv("BENCH_BODY") or ""
local addr = os.getenv("BENCH_ADDR") or "none"
local prefix = tonumber(os.getenv("BENCH_PREFIX") or "10")
local limit = tonumber(os.getenv("BENCH_LIMIT") or "0")

if body == "" then body = nil end
local contentType = "application/json"

if addr == "none" then
  -- A static request: wrk formats it once.
  wrk.method = method
  wrk.path = path
  wrk.body = body
  if body then wrk.headers["Content-Type"] = contentType end
else
  -- The same bytes wrk.format() would send, with X-Forwarded-For last.
  local head, tail
  function init(args)
    head = method .. " " .. path .. " HTTP/1.1\r\nHost: " .. wrk.headers["Host"] .. "\r\n"
    if body then
      head = head .. "Content-Type: " .. contentType .. "\r\nContent-Length: " .. #body .. "\r\n"
    end
    head = head .. "X-Forwarded-For: "
    tail = "\r\n\r\n" .. (body or "")
  end
  local format, floor = string.format, math.floor
  local counter = 0
  function request()
    counter = counter + 1
    if limit > 0 and counter == limit + 1 then
      -- wrk sleeps out its whole duration; this line tells the driver to end it (SIGINT).
      io.stderr:write("limit reached\n")
      io.stderr:flush()
      wrk.thread:stop()
    end
    local n = counter
    if addr == "v4" then
      return head .. format("%d.%d.%d.%d", prefix, floor(n / 65536) % 256,
        floor(n / 256) % 256, n % 256) .. tail
    end
    return head .. format("2001:db8:%x::%x:%x", prefix, floor(n / 65536) % 65536, n % 65536)
      .. tail
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"socket_errors":%d,"non_2xx":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect + e.read + e.write + e.timeout, e.status))
end
