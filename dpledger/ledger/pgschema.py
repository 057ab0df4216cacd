"""The PostgreSQL schema of team ledgers: tables, the check-and-debit trigger, roles, grants.

Installed (idempotently) by ``dpledger ledger init-db URL`` (:func:`dpledger.ledger.pgconnect.
init_db`). Everything lives in the schema ``dpledger``, owned by the role
``dpledger_keeper``, which cannot log in and of which no one is a member; the functions
that move a ledger's head run as that role (``SECURITY DEFINER``). Three roles that
people's database users are made members of:

* ``dpledger_owner`` — creates ledgers and quotas and sets their budgets (and may spend);
* ``dpledger_analyst`` — spends (inserts receipts) and reads;
* ``dpledger_auditor`` — reads.

The invariant the database enforces, whatever the client: the trigger on
``dpledger.receipts`` locks the ledger's head row, checks that the receipt follows the
head (sequence number and chain link; for an unkeyed ledger also its SHA-256), adds the
receipt's exact charge (numerators and denominators, ``numeric``) to the head's exact
running total and refuses the insert — so the whole transaction — unless the new total
is within the ledger's limit in every coordinate (and within its quota's, for a receipt
charged to a quota). The limits are set by the owner when a ledger is created (each
filter an automatic ledger may settle on; a Rényi order chosen at the first release
gets the budget the conversion gives, computed here). No role may update or delete a
receipt, a limit, a quota or a ledger row (privileges, and triggers that refuse even the
tables' owner); a head moves only inside the receipt trigger. Error codes ``DPL01``
(over budget), ``DPL02`` (append-only), ``DPL03`` (a receipt that does not follow the
head or does not match its body), ``DPL04`` (no budget in that currency).
"""

from __future__ import annotations

from dpledger._public import namespace

__all__ = ["ROLES", "SCHEMA_SQL", "SCHEMA_VERSION"]

SCHEMA_VERSION = "1"

ROLES = ("dpledger_keeper", "dpledger_owner", "dpledger_analyst", "dpledger_auditor")

SCHEMA_SQL = r"""
DO $roles$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['dpledger_keeper', 'dpledger_owner', 'dpledger_analyst',
                           'dpledger_auditor'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      EXECUTE format('CREATE ROLE %I NOLOGIN', r);
    END IF;
  END LOOP;
END
$roles$;

CREATE SCHEMA IF NOT EXISTS dpledger;

CREATE TABLE IF NOT EXISTS dpledger.about (
  key   text PRIMARY KEY,
  value text NOT NULL
);
INSERT INTO dpledger.about VALUES ('schema_version', '1') ON CONFLICT (key) DO NOTHING;

CREATE TABLE IF NOT EXISTS dpledger.ledgers (
  name       text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
  config     text NOT NULL,
  genesis    text NOT NULL,
  keyed      boolean NOT NULL,
  epsilon    numeric NOT NULL,
  delta      numeric NOT NULL,
  created_by text NOT NULL DEFAULT session_user,
  created_at timestamptz NOT NULL DEFAULT now(),
  count      bigint NOT NULL DEFAULT 0,
  hash       text NOT NULL,
  seal       text NOT NULL,
  state      text,
  filter     text,
  limit_num  numeric[],
  limit_den  numeric[],
  total_num  numeric[],
  total_den  numeric[]
);

CREATE TABLE IF NOT EXISTS dpledger.limits (
  ledger    text NOT NULL REFERENCES dpledger.ledgers (name),
  scope     text NOT NULL DEFAULT '',
  filter    text NOT NULL,
  limit_num numeric[] NOT NULL,
  limit_den numeric[] NOT NULL,
  PRIMARY KEY (ledger, scope, filter)
);

CREATE TABLE IF NOT EXISTS dpledger.quotas (
  ledger     text NOT NULL REFERENCES dpledger.ledgers (name),
  name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  config     text NOT NULL,
  epsilon    numeric NOT NULL,
  delta      numeric NOT NULL,
  created_by text NOT NULL DEFAULT session_user,
  created_at timestamptz NOT NULL DEFAULT now(),
  total_num  numeric[],
  total_den  numeric[],
  PRIMARY KEY (ledger, name)
);

-- one row per server process: writing it makes a commit that flushes the WAL (see sync)
CREATE TABLE IF NOT EXISTS dpledger.syncs (
  backend_pid integer PRIMARY KEY,
  at          timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS dpledger.receipts (
  ledger          text NOT NULL REFERENCES dpledger.ledgers (name),
  seq             bigint NOT NULL,
  body            text NOT NULL,
  hash            text NOT NULL,
  prev            text NOT NULL,
  filter          text NOT NULL,
  charge_num      numeric[] NOT NULL,
  charge_den      numeric[] NOT NULL,
  total_num       numeric[] NOT NULL,
  total_den       numeric[] NOT NULL,
  quota           text,
  quota_total_num numeric[],
  quota_total_den numeric[],
  head_seal       text,
  state           text,
  imported        boolean NOT NULL DEFAULT false,
  db_user         text NOT NULL DEFAULT session_user,
  client_addr     inet DEFAULT inet_client_addr(),
  backend_pid     integer DEFAULT pg_backend_pid(),
  recorded_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (ledger, seq)
);

-- numbers handed out once each: mixed into seeded noise streams (two analysts at one
-- head with one seed must not draw the same noise)
CREATE SEQUENCE IF NOT EXISTS dpledger.noise_nonces;

-- exact rational arithmetic on (numerator, denominator) arrays, reduced like Fraction
CREATE OR REPLACE FUNCTION dpledger.exact_add(
  a_num numeric[], a_den numeric[], b_num numeric[], b_den numeric[],
  OUT num numeric[], OUT den numeric[])
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  i integer;
  n numeric;
  d numeric;
  g numeric;
BEGIN
  num := '{}';
  den := '{}';
  FOR i IN 1 .. coalesce(array_length(a_num, 1), 0) LOOP
    n := a_num[i] * b_den[i] + b_num[i] * a_den[i];
    d := a_den[i] * b_den[i];
    g := gcd(n, d);
    IF g > 1 THEN
      n := div(n, g);
      d := div(d, g);
    END IF;
    num := num || n;
    den := den || d;
  END LOOP;
END
$fn$;

-- within: every coordinate of num/den at most limit_num/limit_den (arrays of one length;
-- anything else, or a NULL, is not within). A loop, not a set-returning query: a function
-- with a SET clause is never inlined, and the query cost three times the loop per spend
CREATE OR REPLACE FUNCTION dpledger.exact_within(
  num numeric[], den numeric[], limit_num numeric[], limit_den numeric[])
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  width integer := coalesce(array_length(num, 1), 0);
  i integer;
BEGIN
  IF coalesce(array_length(den, 1), 0) <> width
     OR coalesce(array_length(limit_num, 1), 0) <> width
     OR coalesce(array_length(limit_den, 1), 0) <> width THEN
    RETURN false;
  END IF;
  FOR i IN 1 .. width LOOP
    IF NOT coalesce(num[i] * limit_den[i] <= limit_num[i] * den[i], false) THEN
      RETURN false;
    END IF;
  END LOOP;
  RETURN true;
END
$fn$;

-- a well-formed exact charge: as many coordinates as the budget, each a non-negative
-- integer over a positive integer
CREATE OR REPLACE FUNCTION dpledger.exact_valid(num numeric[], den numeric[], width integer)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  i integer;
BEGIN
  IF array_length(num, 1) IS DISTINCT FROM width OR array_length(den, 1) IS DISTINCT FROM width
  THEN
    RETURN false;
  END IF;
  FOR i IN 1 .. width LOOP
    IF num[i] IS NULL OR den[i] IS NULL OR num[i] < 0 OR den[i] <= 0
       OR num[i] <> trunc(num[i]) OR den[i] <> trunc(den[i]) THEN
      RETURN false;
    END IF;
  END LOOP;
  RETURN true;
END
$fn$;

-- the Rényi budget at order a converting to (eps, delta), rounded down to 40 decimals
-- (Balle et al. 2020, Thm 21): eps - log(1 - 1/a) + (log delta + log a) / (a - 1)
CREATE OR REPLACE FUNCTION dpledger.rdp_budget(eps numeric, delta numeric, a numeric)
RETURNS numeric
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT trunc(eps - ln(round((a - 1) / a, 60))
               + (ln(round(delta, 400)) + ln(round(a, 60))) / (a - 1), 40)
$fn$;

CREATE OR REPLACE FUNCTION dpledger.refuse(code text, message text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
END
$fn$;

-- a ledger's head, locked for this transaction (spenders serialise on this row only);
-- the transaction's commit then does not wait for the disk, so the row is released
-- sooner: the client calls dpledger.sync() after it, before it reports the spend
CREATE OR REPLACE FUNCTION dpledger.lock_head(ledger_name text)
RETURNS TABLE (config text, genesis text, count bigint, hash text, seal text, state text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY SELECT l.config, l.genesis, l.count, l.hash, l.seal, l.state
  FROM dpledger.ledgers l WHERE l.name = ledger_name FOR UPDATE;
END
$fn$;

-- is the ledger's head still (expected_count, expected_hash)? Locks the head row first
-- (waiting for a spend in progress, then reading its result), so a receipt inserted under
-- this condition follows the head it was built on; a spender uses it for one-round-trip
-- spends when no one else is spending (the trigger checks the same again, as always)
CREATE OR REPLACE FUNCTION dpledger.head_is(
  ledger_name text, expected_count bigint, expected_hash text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  same boolean;
BEGIN
  SELECT l.count = expected_count AND l.hash = expected_hash INTO same
  FROM dpledger.ledgers l WHERE l.name = ledger_name FOR UPDATE;
  RETURN coalesce(same, false);
END
$fn$;

-- check-and-debit: the budget invariant, enforced in the transaction that appends
CREATE OR REPLACE FUNCTION dpledger.receipt_append() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  h dpledger.ledgers%ROWTYPE;
  q dpledger.quotas%ROWTYPE;
  b jsonb;
  f jsonb;
  acct text;
  lim_num numeric[];
  lim_den numeric[];
  q_num numeric[];
  q_den numeric[];
  t record;
  qt record;
  rdp numeric;
  width integer;
BEGIN
  SELECT * INTO h FROM dpledger.ledgers WHERE name = NEW.ledger FOR UPDATE;
  IF NOT FOUND THEN
    PERFORM dpledger.refuse('DPL03', format('there is no ledger named %L', NEW.ledger));
  END IF;
  IF NEW.seq IS DISTINCT FROM h.count OR NEW.prev IS DISTINCT FROM h.hash THEN
    PERFORM dpledger.refuse('DPL03', format(
      'receipt %s does not follow the head of ledger %L (%s receipts): the writer is out '
      'of date; nothing was recorded', NEW.seq, NEW.ledger, h.count));
  END IF;
  IF NEW.head_seal IS NULL OR NEW.state IS NULL THEN
    PERFORM dpledger.refuse('DPL03', 'a receipt must carry the new head''s seal and state');
  END IF;
  b := NEW.body::jsonb;
  IF (b ->> 'seq')::bigint IS DISTINCT FROM NEW.seq OR b ->> 'prev' IS DISTINCT FROM NEW.prev THEN
    PERFORM dpledger.refuse('DPL03', 'the receipt''s body does not match its number or link');
  END IF;
  IF NEW.imported AND NOT pg_has_role(session_user, 'dpledger_owner', 'MEMBER') THEN
    PERFORM dpledger.refuse('DPL03', 'only a member of dpledger_owner may copy receipts in');
  END IF;
  IF NOT NEW.imported AND b -> 'principal' ->> 'db_user' IS DISTINCT FROM session_user THEN
    PERFORM dpledger.refuse('DPL03', format(
      'the receipt names database user %L but was written by %L',
      b -> 'principal' ->> 'db_user', session_user));
  END IF;
  IF NOT h.keyed AND NEW.hash IS DISTINCT FROM
      encode(sha256(convert_to(NEW.prev || E'\n' || NEW.body, 'UTF8')), 'hex') THEN
    PERFORM dpledger.refuse('DPL03', 'the receipt''s hash does not match its body');
  END IF;
  NEW.db_user := session_user;
  NEW.client_addr := inet_client_addr();
  NEW.backend_pid := pg_backend_pid();
  NEW.recorded_at := clock_timestamp();

  -- the currency: decided by the first receipt, among the limits the owner set
  IF h.filter IS NULL THEN
    f := NEW.filter::jsonb;
    acct := f ->> 'accountant';
    IF acct = 'plan' THEN
      IF b ->> 'kind' IS DISTINCT FROM 'plan' THEN
        PERFORM dpledger.refuse('DPL03', 'only a plan receipt sets the currency ''plan''');
      END IF;
      lim_num := ARRAY[(SELECT sum((r ->> 1)::bigint)
                        FROM jsonb_array_elements(b -> 'schedule') r)::numeric];
      lim_den := ARRAY[1::numeric];
    ELSE
      SELECT l.limit_num, l.limit_den INTO lim_num, lim_den
      FROM dpledger.limits l
      WHERE l.ledger = NEW.ledger AND l.scope = '' AND l.filter = NEW.filter;
      IF NOT FOUND AND acct = 'rdp' AND (f ->> 'order') IS NOT NULL AND EXISTS (
          SELECT 1 FROM dpledger.limits l WHERE l.ledger = NEW.ledger AND l.scope = ''
          AND l.filter::jsonb ->> 'accountant' = 'zcdp') THEN
        -- an automatic ledger settling on a Renyi order chosen for its first release
        rdp := dpledger.rdp_budget(h.epsilon, h.delta, (f ->> 'order')::numeric);
        IF rdp IS NULL OR rdp <= 0 THEN
          PERFORM dpledger.refuse('DPL04', 'no Renyi budget at that order');
        END IF;
        lim_num := ARRAY[trunc(rdp * 10::numeric ^ 40)];
        lim_den := ARRAY[10::numeric ^ 40];
      ELSIF NOT FOUND THEN
        PERFORM dpledger.refuse('DPL04', format(
          'ledger %L has no budget in the currency %s (its owner set the currencies it may '
          'use when creating it)', NEW.ledger, NEW.filter));
      END IF;
    END IF;
    width := array_length(lim_num, 1);
    h.filter := NEW.filter;
    h.limit_num := lim_num;
    h.limit_den := lim_den;
    h.total_num := array_fill(0::numeric, ARRAY[width]);
    h.total_den := array_fill(1::numeric, ARRAY[width]);
  ELSIF NEW.filter IS DISTINCT FROM h.filter THEN
    PERFORM dpledger.refuse('DPL03', format(
      'the receipt is charged in %s but ledger %L keeps %s', NEW.filter, NEW.ledger, h.filter));
  END IF;
  IF b ->> 'kind' = 'plan' AND NEW.seq <> 0 THEN
    PERFORM dpledger.refuse('DPL03', 'a plan must be the first receipt of a ledger');
  END IF;

  -- the charge: exact, non-negative, one coordinate per coordinate of the budget
  IF NOT dpledger.exact_valid(NEW.charge_num, NEW.charge_den, array_length(h.limit_num, 1))
  THEN
    PERFORM dpledger.refuse('DPL03', 'the receipt''s exact charge is malformed');
  END IF;
  SELECT * INTO t FROM dpledger.exact_add(h.total_num, h.total_den, NEW.charge_num, NEW.charge_den);
  IF NOT dpledger.exact_within(t.num, t.den, h.limit_num, h.limit_den) THEN
    PERFORM dpledger.refuse('DPL01', format(
      'the database refused the spend: it would take ledger %L over its budget; nothing '
      'was recorded', NEW.ledger));
  END IF;
  IF t.num IS DISTINCT FROM NEW.total_num OR t.den IS DISTINCT FROM NEW.total_den THEN
    PERFORM dpledger.refuse('DPL03', 'the running total the client computed differs from the '
      'database''s; nothing was recorded');
  END IF;

  -- a quota: the same check against the quota's own limit, in the same transaction
  IF NEW.quota IS NOT NULL THEN
    SELECT * INTO q FROM dpledger.quotas WHERE ledger = NEW.ledger AND name = NEW.quota FOR UPDATE;
    IF NOT FOUND THEN
      PERFORM dpledger.refuse('DPL04', format('ledger %L has no quota %L', NEW.ledger, NEW.quota));
    END IF;
    SELECT l.limit_num, l.limit_den INTO q_num, q_den FROM dpledger.limits l
    WHERE l.ledger = NEW.ledger AND l.scope = NEW.quota AND l.filter = h.filter;
    IF NOT FOUND THEN
      PERFORM dpledger.refuse('DPL04', format(
        'quota %L of ledger %L has no budget in the currency %s', NEW.quota, NEW.ledger, h.filter));
    END IF;
    width := array_length(h.limit_num, 1);
    SELECT * INTO qt FROM dpledger.exact_add(
      coalesce(q.total_num, array_fill(0::numeric, ARRAY[width])),
      coalesce(q.total_den, array_fill(1::numeric, ARRAY[width])),
      NEW.charge_num, NEW.charge_den);
    IF NOT dpledger.exact_within(qt.num, qt.den, q_num, q_den) THEN
      PERFORM dpledger.refuse('DPL01', format(
        'the database refused the spend: it would take quota %L of ledger %L over its '
        'budget; nothing was recorded', NEW.quota, NEW.ledger));
    END IF;
    IF qt.num IS DISTINCT FROM NEW.quota_total_num
       OR qt.den IS DISTINCT FROM NEW.quota_total_den THEN
      PERFORM dpledger.refuse('DPL03', 'the quota total the client computed differs from the '
        'database''s; nothing was recorded');
    END IF;
    UPDATE dpledger.quotas SET total_num = qt.num, total_den = qt.den
    WHERE ledger = NEW.ledger AND name = NEW.quota;
  ELSIF NEW.quota_total_num IS NOT NULL THEN
    PERFORM dpledger.refuse('DPL03', 'a quota total without a quota');
  END IF;

  UPDATE dpledger.ledgers
  SET count = h.count + 1, hash = NEW.hash, seal = NEW.head_seal, state = NEW.state,
      filter = h.filter, limit_num = h.limit_num, limit_den = h.limit_den,
      total_num = t.num, total_den = t.den
  WHERE name = NEW.ledger;
  NEW.head_seal := NULL;
  NEW.state := NULL;
  RETURN NEW;
END
$fn$;

-- a durability barrier: a spend commits without waiting for the disk (so the head row is
-- held only while the spend is checked), then calls this in a synchronous transaction,
-- whose commit flushes the WAL up to and past the spend's commit record
CREATE OR REPLACE FUNCTION dpledger.sync() RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
  INSERT INTO dpledger.syncs VALUES (pg_backend_pid(), clock_timestamp())
  ON CONFLICT (backend_pid) DO UPDATE SET at = excluded.at
$fn$;

-- a new ledger starts empty, whatever its creator sends
CREATE OR REPLACE FUNCTION dpledger.ledger_create() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  NEW.count := 0;
  NEW.hash := NEW.genesis;
  NEW.state := NULL;
  NEW.filter := NULL;
  NEW.limit_num := NULL;
  NEW.limit_den := NULL;
  NEW.total_num := NULL;
  NEW.total_den := NULL;
  NEW.created_by := session_user;
  NEW.created_at := now();
  RETURN NEW;
END
$fn$;

-- limits are set before anything is spent (for a quota: when it is created)
CREATE OR REPLACE FUNCTION dpledger.limit_create() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF NEW.scope = '' AND (SELECT count FROM dpledger.ledgers WHERE name = NEW.ledger) <> 0 THEN
    PERFORM dpledger.refuse('DPL02', format(
      'the budget of ledger %L is fixed: receipts were recorded', NEW.ledger));
  END IF;
  IF NEW.scope <> '' AND EXISTS (SELECT 1 FROM dpledger.quotas
      WHERE ledger = NEW.ledger AND name = NEW.scope AND total_num IS NOT NULL) THEN
    PERFORM dpledger.refuse('DPL02', format(
      'the budget of quota %L is fixed: it was spent from', NEW.scope));
  END IF;
  RETURN NEW;
END
$fn$;

CREATE OR REPLACE FUNCTION dpledger.quota_create() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  NEW.total_num := NULL;
  NEW.total_den := NULL;
  NEW.created_by := session_user;
  NEW.created_at := now();
  RETURN NEW;
END
$fn$;

-- history is append-only: nobody updates or deletes (a head moves only with a receipt)
CREATE OR REPLACE FUNCTION dpledger.append_only() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF TG_OP = 'UPDATE' AND TG_TABLE_NAME IN ('ledgers', 'quotas') AND pg_trigger_depth() > 1 THEN
    RETURN NEW;  -- the receipt trigger moving a head or a quota's total
  END IF;
  PERFORM dpledger.refuse('DPL02', format(
    'dpledger.%s is append-only: %s is refused (a ledger''s history cannot be changed)',
    TG_TABLE_NAME, TG_OP));
  RETURN NULL;
END
$fn$;

DROP TRIGGER IF EXISTS receipt_append ON dpledger.receipts;
CREATE TRIGGER receipt_append BEFORE INSERT ON dpledger.receipts
  FOR EACH ROW EXECUTE FUNCTION dpledger.receipt_append();
DROP TRIGGER IF EXISTS ledger_create ON dpledger.ledgers;
CREATE TRIGGER ledger_create BEFORE INSERT ON dpledger.ledgers
  FOR EACH ROW EXECUTE FUNCTION dpledger.ledger_create();
DROP TRIGGER IF EXISTS limit_create ON dpledger.limits;
CREATE TRIGGER limit_create BEFORE INSERT ON dpledger.limits
  FOR EACH ROW EXECUTE FUNCTION dpledger.limit_create();
DROP TRIGGER IF EXISTS quota_create ON dpledger.quotas;
CREATE TRIGGER quota_create BEFORE INSERT ON dpledger.quotas
  FOR EACH ROW EXECUTE FUNCTION dpledger.quota_create();
DO $triggers$
DECLARE tab text;
BEGIN
  FOREACH tab IN ARRAY ARRAY['receipts', 'ledgers', 'limits', 'quotas', 'about'] LOOP
    EXECUTE format('DROP TRIGGER IF EXISTS append_only ON dpledger.%I', tab);
    EXECUTE format('CREATE TRIGGER append_only BEFORE UPDATE OR DELETE ON dpledger.%I '
                   'FOR EACH ROW EXECUTE FUNCTION dpledger.append_only()', tab);
    EXECUTE format('DROP TRIGGER IF EXISTS append_only_truncate ON dpledger.%I', tab);
    EXECUTE format('CREATE TRIGGER append_only_truncate BEFORE TRUNCATE ON dpledger.%I '
                   'FOR EACH STATEMENT EXECUTE FUNCTION dpledger.append_only()', tab);
  END LOOP;
END
$triggers$;

-- ownership and least privilege
ALTER SCHEMA dpledger OWNER TO dpledger_keeper;
DO $owners$
DECLARE obj text;
BEGIN
  FOREACH obj IN ARRAY ARRAY['about', 'ledgers', 'limits', 'quotas', 'receipts', 'syncs'] LOOP
    EXECUTE format('ALTER TABLE dpledger.%I OWNER TO dpledger_keeper', obj);
    EXECUTE format('REVOKE ALL ON dpledger.%I FROM PUBLIC', obj);
  END LOOP;
  ALTER SEQUENCE dpledger.noise_nonces OWNER TO dpledger_keeper;
  REVOKE ALL ON SEQUENCE dpledger.noise_nonces FROM PUBLIC;
  FOR obj IN SELECT p.oid::regprocedure::text FROM pg_proc p
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'dpledger' LOOP
    EXECUTE format('ALTER FUNCTION %s OWNER TO dpledger_keeper', obj);
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', obj);
  END LOOP;
END
$owners$;
REVOKE ALL ON SCHEMA dpledger FROM PUBLIC;
GRANT USAGE ON SCHEMA dpledger TO dpledger_owner, dpledger_analyst, dpledger_auditor;
GRANT SELECT ON ALL TABLES IN SCHEMA dpledger
  TO dpledger_owner, dpledger_analyst, dpledger_auditor;
GRANT INSERT ON dpledger.ledgers, dpledger.limits, dpledger.quotas TO dpledger_owner;
GRANT INSERT ON dpledger.receipts TO dpledger_owner, dpledger_analyst;
GRANT EXECUTE ON FUNCTION dpledger.lock_head(text) TO dpledger_owner, dpledger_analyst;
GRANT EXECUTE ON FUNCTION dpledger.sync() TO dpledger_owner, dpledger_analyst;
GRANT EXECUTE ON FUNCTION dpledger.head_is(text, bigint, text)
  TO dpledger_owner, dpledger_analyst;
GRANT USAGE ON SEQUENCE dpledger.noise_nonces TO dpledger_owner, dpledger_analyst;
"""
"""The whole schema, roles and grants: safe to run again (``CREATE ... IF NOT EXISTS``,
``CREATE OR REPLACE``); run by a database superuser (or a role that may create roles and
owns the database)."""


__dir__ = namespace(__all__)
