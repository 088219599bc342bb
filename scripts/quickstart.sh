#!/usr/bin/env bash
# README's Quickstart, step by step, as a script: CI runs it (.ci/run), so the README stays true.
# From zero to a routed order: the service and the sandbox platform, a user, an API key, a storefront
# and a supplier, a signed orders/create webhook sent with curl and openssl, the order routed.
#
#   bash scripts/quickstart.sh            # free ports, a throw-away DATA_DIR, everything stopped at the end
#   QUICKSTART_KEEP=1 bash scripts/quickstart.sh   # leave both running to open /console (Ctrl-C stops them)
set -euo pipefail
cd "$(dirname "$0")/.."

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
json() { node -e 'let t="";process.stdin.on("data",d=>t+=d).on("end",()=>{let v=JSON.parse(t);for(const k of process.argv[1].split("."))v=v[k];console.log(v)})' "$1"; }

PORT=${PORT:-$(free_port)}
SANDBOX_PORT=${SANDBOX_PORT:-$(free_port)}
OWN_DATA_DIR=${DATA_DIR:-}
export DATA_DIR=${DATA_DIR:-$(mktemp -d -t ors-quickstart-XXXXXX)}
API=http://127.0.0.1:$PORT
groups=()
# Each program runs in a process group of its own (setsid), stopped as a terminal's Ctrl-C would stop it.
stop() {
  for group in "${groups[@]}"; do kill -INT -- "-$group" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # A throw-away DATA_DIR: remove it, and its cluster where root's is kept apart (README, Operations).
  if [ -z "$OWN_DATA_DIR" ]; then rm -rf "$DATA_DIR" "$DATA_DIR".*.log; npm run --silent clusters:prune > /dev/null; fi
}
trap stop EXIT

# 1. The sandbox platform (stands in for the storefront and the suppliers) and the service pointed at it.
PORT=$SANDBOX_PORT setsid npm run --silent sandbox > "$DATA_DIR.sandbox.log" 2>&1 & groups+=($!)
PORT=$PORT PLATFORM_BASE_URL="http://127.0.0.1:$SANDBOX_PORT/{shopDomain}" LOG_LEVEL=warn setsid npm start --silent > "$DATA_DIR.service.log" 2>&1 & groups+=($!)
until curl -sf "$API/readyz" > /dev/null; do sleep 0.5; done
echo "service at $API (logs: $DATA_DIR.service.log), sandbox at http://127.0.0.1:$SANDBOX_PORT"

# 2. Register; the access token authenticates the next call, which creates an API key for everything after.
TOKEN=$(curl -sf "$API/v1/auth/register" -H 'content-type: application/json' \
  -d '{"email":"me@reseller.example","password":"correct horse battery staple"}' | json accessToken)
KEY=$(curl -sf "$API/v1/api_keys" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
  -d '{"name":"quickstart","environment":"test"}' | json raw_key)
echo "API key: ${KEY:0:12}…"

# 3. Connect the storefront (platform_a) and add a supplier (custom) for the vendor "Acme".
SHOP_SECRET=whsec_quickstart_shop
SHOP=$(curl -sf "$API/v1/reseller_stores" -H "authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d "{\"name\":\"My shop\",\"platform\":\"platform_a\",\"shopDomain\":\"my-shop.example\",\"accessToken\":\"shpat_quickstart\",\"webhookSecret\":\"$SHOP_SECRET\"}" | json id)
curl -sf "$API/v1/reseller_stores/$SHOP/source_stores" -H "authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"name":"Acme","platform":"custom","shopDomain":"acme.example","accessToken":"acme_quickstart","webhookSecret":"whsec_quickstart_acme","vendorTag":"Acme","pricingMode":"percentage","pricingConfig":{"type":"percentage","value":20}}' > /dev/null
echo "reseller store $SHOP with supplier Acme"

# 4. The storefront posts a signed orders/create webhook: HMAC-SHA256 of the raw body, base64.
BODY='{"id":1001,"currency":"USD","email":"customer@example.com","line_items":[{"sku":"MUG-1","title":"Mug","vendor":"Acme","quantity":2,"price":"12.50"}]}'
SIGNATURE=$(printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SHOP_SECRET" -binary | base64)
curl -sf "$API/v1/orders/webhook" -H 'content-type: application/json' \
  -H "X-Platform-Shop-Domain: my-shop.example" -H "X-Platform-Topic: orders/create" \
  -H "X-Platform-Webhook-Id: quickstart-1" -H "X-Platform-Hmac-SHA256: $SIGNATURE" -d "$BODY"
echo

# 5. The order is routed: one sync job for Acme, completed with the supplier's order id.
for _ in $(seq 1 60); do
  JOB=$(curl -sf "$API/v1/sync_jobs?reseller_store_id=$SHOP" -H "authorization: Bearer $KEY")
  [ "$(printf '%s' "$JOB" | json data.0.status 2>/dev/null)" = completed ] && break
  sleep 0.5
done
STATUS=$(printf '%s' "$JOB" | json data.0.status)
echo "sync job $(printf '%s' "$JOB" | json data.0.id): $STATUS, supplier order $(printf '%s' "$JOB" | json data.0.sourceOrderId)"
echo "console: $API/console (sign in as me@reseller.example)"
[ "$STATUS" = completed ]

if [ -n "${QUICKSTART_KEEP:-}" ]; then echo "running; Ctrl-C stops"; wait; fi
