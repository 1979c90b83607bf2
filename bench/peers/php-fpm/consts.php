<?php
/*
 * consts.php: the limits, SQL and fixed strings of the PHP peer, shared by
 * index.php (every request) and breakdown.php. Constants are not kept by
 * opcache preload, so index.php includes this file on every request.
 */
declare(strict_types=1);

const MAX_BODY = 65536;
const MAX_TOKEN = 8192;
const MAX_DEPTH = 64;
const MAX_ID = '9223372036854775807';
const JSON_OUT = JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE;
const WWW_REALM = 'WWW-Authenticate: Bearer realm="events"';
const APCU_KEY = 'cfpm-bench:rsa-n-e';
// DER DigestInfo prefix of SHA-256 (RFC 8017 section 9.2, note 1).
const SHA256_DIGEST_INFO = "\x30\x31\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03"
    . "\x04\x02\x01\x05\x00\x04\x20";

const SQL_GET = "SELECT id, subject, kind, payload::text, "
    . "to_char(created_at AT TIME ZONE 'UTC', "
    . "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') "
    . "FROM events WHERE id = ? AND subject = ?";
const SQL_INSERT = "INSERT INTO events (subject, kind, payload) "
    . "VALUES (?, ?, CAST(? AS jsonb)) RETURNING id";
