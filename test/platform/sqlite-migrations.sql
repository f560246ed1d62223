-- migration: platform/0001_create_leases
CREATE TABLE leases (
        key TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        fence INTEGER NOT NULL,
        acquired_at INTEGER NOT NULL,
        renewed_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
-- migration: platform/0002_create_demo_seeds
CREATE TABLE demo_seeds (
        domain TEXT PRIMARY KEY,
        seeded_at INTEGER NOT NULL
      );
-- migration: platform/0003_create_objects
CREATE TABLE objects (
        key TEXT PRIMARY KEY,
        body BLOB NOT NULL,
        size INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        modified_at INTEGER NOT NULL
      );
-- migration: platform/0004_create_vault
CREATE TABLE vault_items (
        name TEXT PRIMARY KEY,
        nonce BLOB NOT NULL,
        ciphertext BLOB NOT NULL,
        tag BLOB NOT NULL,
        fields TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
CREATE TABLE vault_grants (
        id TEXT PRIMARY KEY,
        consumer TEXT NOT NULL,
        actions TEXT NOT NULL,
        items TEXT NOT NULL,
        hosts TEXT NOT NULL,
        secret_hash TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
CREATE TABLE vault_tokens (
        hash TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
CREATE TABLE vault_audit (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        event TEXT NOT NULL,
        consumer TEXT,
        grant_id TEXT,
        detail TEXT
      );
-- migration: product/0001_create_experiment_assignments
CREATE TABLE experiment_assignments (
        experiment_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        variant TEXT NOT NULL,
        assigned_at INTEGER NOT NULL,
        PRIMARY KEY (experiment_id, subject)
      );
CREATE TABLE experiment_exposures (
        experiment_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        variant TEXT NOT NULL,
        first_exposed_at INTEGER NOT NULL,
        last_exposed_at INTEGER NOT NULL,
        exposures INTEGER NOT NULL,
        PRIMARY KEY (experiment_id, subject)
      );
-- migration: product/0002_create_analytics
CREATE TABLE analytics_events (
        site_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        collector TEXT NOT NULL,
        name TEXT NOT NULL,
        occurred_at INTEGER NOT NULL,
        visitor_id TEXT NOT NULL,
        session_id TEXT,
        url TEXT,
        referrer TEXT,
        utm TEXT,
        props TEXT,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (site_id, event_id)
      );
CREATE TABLE analytics_attribution (
        site_id TEXT NOT NULL,
        visitor_id TEXT NOT NULL,
        first_event_id TEXT NOT NULL,
        first_seen_at INTEGER NOT NULL,
        landing_url TEXT,
        referrer TEXT,
        utm_source TEXT,
        utm_medium TEXT,
        utm_campaign TEXT,
        utm_content TEXT,
        utm_term TEXT,
        PRIMARY KEY (site_id, visitor_id)
      );
-- migration: product/0003_create_onboarding_events
CREATE TABLE onboarding_events (
        app_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        step TEXT NOT NULL,
        occurred_at INTEGER NOT NULL,
        props TEXT,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (app_id, event_id)
      );
-- migration: product/0004_create_blog_posts
CREATE TABLE blog_posts (
        surface TEXT NOT NULL,
        slug TEXT NOT NULL,
        title TEXT NOT NULL,
        excerpt TEXT NOT NULL,
        cover_image TEXT,
        tags TEXT NOT NULL,
        status TEXT NOT NULL,
        published_at INTEGER,
        updated_at INTEGER NOT NULL,
        reading_time_minutes INTEGER NOT NULL,
        html TEXT NOT NULL,
        source_digest TEXT NOT NULL,
        source_file TEXT NOT NULL,
        PRIMARY KEY (surface, slug)
      );
CREATE INDEX blog_posts_listing ON blog_posts (surface, status, published_at DESC, slug);
-- migration: product/0005_analytics_readout_indexes
ALTER TABLE analytics_events ADD COLUMN page TEXT;
ALTER TABLE analytics_events ADD COLUMN referrer_host TEXT;
ALTER TABLE analytics_events ADD COLUMN utm_source TEXT;
UPDATE analytics_events SET page = (CASE WHEN url IS NULL OR url = '' THEN NULL
  ELSE coalesce(nullif(substr((CASE WHEN instr(url, '://') > 0 THEN substr(substr(url, instr(url, '://') + 3), instr(substr(url, instr(url, '://') + 3) || '/', '/')) ELSE url END), 1, instr(replace((CASE WHEN instr(url, '://') > 0 THEN substr(substr(url, instr(url, '://') + 3), instr(substr(url, instr(url, '://') + 3) || '/', '/')) ELSE url END), '#', '?') || '?', '?') - 1), ''), '/') END),
        referrer_host = (CASE WHEN referrer IS NULL OR referrer = '' THEN NULL
  ELSE nullif(CASE WHEN lower(substr((CASE WHEN instr(referrer, '://') > 0 THEN substr(referrer, instr(referrer, '://') + 3) ELSE referrer END), 1, instr(replace(replace(replace((CASE WHEN instr(referrer, '://') > 0 THEN substr(referrer, instr(referrer, '://') + 3) ELSE referrer END), '?', '/'), '#', '/'), ':', '/') || '/', '/') - 1)) LIKE 'www.%' THEN substr(lower(substr((CASE WHEN instr(referrer, '://') > 0 THEN substr(referrer, instr(referrer, '://') + 3) ELSE referrer END), 1, instr(replace(replace(replace((CASE WHEN instr(referrer, '://') > 0 THEN substr(referrer, instr(referrer, '://') + 3) ELSE referrer END), '?', '/'), '#', '/'), ':', '/') || '/', '/') - 1)), 5) ELSE lower(substr((CASE WHEN instr(referrer, '://') > 0 THEN substr(referrer, instr(referrer, '://') + 3) ELSE referrer END), 1, instr(replace(replace(replace((CASE WHEN instr(referrer, '://') > 0 THEN substr(referrer, instr(referrer, '://') + 3) ELSE referrer END), '?', '/'), '#', '/'), ':', '/') || '/', '/') - 1)) END, '') END), utm_source = (CASE WHEN json_valid(utm) THEN nullif(json_extract(utm, '$.source'), '') END);
CREATE INDEX analytics_events_summary ON analytics_events
        (site_id, occurred_at, name, visitor_id, page, referrer_host, utm_source);
CREATE INDEX analytics_events_conversions ON analytics_events (name, visitor_id, occurred_at);
-- migration: product/0006_analytics_referrer_host_parsed

          SELECT rowid AS id, referrer, referrer_host FROM analytics_events
          WHERE rowid > ? AND referrer IS NOT NULL ORDER BY rowid LIMIT 1000;
-- migration: groundtruth/0001_create_index
CREATE TABLE gt_registry (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        commit_sha TEXT NOT NULL,
        text TEXT NOT NULL,
        loaded_at INTEGER NOT NULL
      );
CREATE TABLE gt_sources (
        name TEXT PRIMARY KEY,
        indexed_commit TEXT NOT NULL,
        indexed_at INTEGER NOT NULL,
        selection TEXT NOT NULL,
        chunks INTEGER NOT NULL
      );
CREATE TABLE gt_chunks (
        id INTEGER PRIMARY KEY,
        repo TEXT NOT NULL,
        path TEXT NOT NULL,
        commit_sha TEXT NOT NULL,
        line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        heading TEXT NOT NULL,
        content TEXT NOT NULL
      );
CREATE INDEX gt_chunks_by_file ON gt_chunks (repo, path);
CREATE VIRTUAL TABLE gt_chunks_fts USING fts5(heading, content, tokenize = 'porter unicode61');
-- migration: groundtruth/0002_hybrid_ranking
ALTER TABLE gt_chunks ADD COLUMN terms TEXT NOT NULL DEFAULT '';
ALTER TABLE gt_chunks ADD COLUMN digest TEXT NOT NULL DEFAULT '';
ALTER TABLE gt_sources ADD COLUMN vectors_at INTEGER NOT NULL DEFAULT 0;
DROP TABLE gt_chunks_fts;
CREATE VIRTUAL TABLE gt_chunks_fts USING fts5(heading, content, terms, tokenize = 'porter unicode61');
INSERT INTO gt_chunks_fts (rowid, heading, content, terms) SELECT id, heading, content, terms FROM gt_chunks;
CREATE TABLE gt_terms (stem TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE gt_vectors (
        digest TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (digest, model)
      ) WITHOUT ROWID;
CREATE INDEX gt_chunks_by_digest ON gt_chunks (digest);
SELECT heading, content FROM gt_chunks;
UPDATE gt_sources SET selection = 'chunker-changed';
-- migration: market/0001_create_ledger
CREATE TABLE ledger_balances (
        account TEXT NOT NULL,
        asset TEXT NOT NULL,
        balance INTEGER NOT NULL,
        PRIMARY KEY (account, asset)
      );
CREATE TABLE ledger_entries (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        reference TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
CREATE TABLE ledger_legs (
        entry_id INTEGER NOT NULL REFERENCES ledger_entries (id),
        account TEXT NOT NULL,
        asset TEXT NOT NULL,
        amount INTEGER NOT NULL
      );
CREATE INDEX ledger_legs_by_account ON ledger_legs (account, asset);
-- migration: market/0002_create_curves
CREATE TABLE market_curves (
        ticker TEXT PRIMARY KEY,
        virtual_coin INTEGER NOT NULL,
        virtual_token INTEGER NOT NULL,
        real_token INTEGER NOT NULL,
        launched_at INTEGER NOT NULL
      );
CREATE TABLE market_trades (
        id INTEGER PRIMARY KEY,
        ticker TEXT NOT NULL,
        wallet TEXT NOT NULL,
        side TEXT NOT NULL,
        coin INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        fee INTEGER NOT NULL,
        entry_id INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
CREATE INDEX market_trades_by_ticker ON market_trades (ticker, created_at);
-- migration: market/0003_create_agents_auth_chat
CREATE TABLE market_agents (
        ticker TEXT PRIMARY KEY,
        instance_id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        status TEXT NOT NULL,
        burn_rate_hourly INTEGER NOT NULL,
        total_revenue INTEGER NOT NULL DEFAULT 0,
        total_costs INTEGER NOT NULL DEFAULT 0,
        costs_accrued_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
ALTER TABLE market_trades ADD COLUMN virtual_coin_after INTEGER;
ALTER TABLE market_trades ADD COLUMN virtual_token_after INTEGER;
CREATE INDEX market_trades_by_time ON market_trades (created_at);
CREATE TABLE market_api_keys (
        id TEXT PRIMARY KEY,
        prefix TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        wallet TEXT,
        agent TEXT,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
CREATE TABLE market_wallet_nonces (
        address TEXT NOT NULL,
        nonce TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (address, nonce)
      );
CREATE TABLE market_idempotency (
        principal TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        response TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (principal, key)
      );
CREATE TABLE market_chat (
        id INTEGER PRIMARY KEY,
        sender_ticker TEXT NOT NULL,
        sender_name TEXT NOT NULL,
        message TEXT NOT NULL,
        message_type TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
CREATE TABLE market_events (
        seq INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
CREATE TABLE market_coin_prices (
        at INTEGER NOT NULL,
        price INTEGER NOT NULL,
        source TEXT NOT NULL
      );
CREATE INDEX market_coin_prices_by_time ON market_coin_prices (at);
-- migration: market/0004_api_key_changes
CREATE TABLE market_api_key_changes (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT INTO market_api_key_changes (id, n) VALUES (1, 0);
CREATE TRIGGER market_api_keys_updated AFTER UPDATE ON market_api_keys
        BEGIN UPDATE market_api_key_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER market_api_keys_deleted AFTER DELETE ON market_api_keys
        BEGIN UPDATE market_api_key_changes SET n = n + 1 WHERE id = 1; END;
-- migration: fleet/0001_create_jobs
CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        argv TEXT NOT NULL,
        state TEXT NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        worker TEXT,
        lease_expires_at INTEGER,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        finished_at INTEGER,
        exit_code INTEGER,
        error TEXT
      );
CREATE INDEX jobs_by_state ON jobs (state, seq);
CREATE TABLE job_output (
        job_id TEXT NOT NULL,
        line_no INTEGER NOT NULL,
        stream TEXT NOT NULL,
        line TEXT NOT NULL,
        PRIMARY KEY (job_id, line_no)
      );
CREATE TABLE queue_control (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
-- migration: fleet/0002_autonomy_control
CREATE TABLE autonomy_pause (
        id INTEGER PRIMARY KEY,
        paused INTEGER NOT NULL,
        reason TEXT,
        changed_by TEXT,
        changed_at BIGINT NOT NULL
      );
CREATE TABLE autonomy_breakers (
        target TEXT PRIMARY KEY,
        failures INTEGER NOT NULL,
        opened_at BIGINT,
        last_error TEXT,
        updated_at BIGINT NOT NULL
      );
-- migration: fleet/0003_job_cancel_reason
ALTER TABLE jobs ADD COLUMN cancel_reason TEXT;
ALTER TABLE jobs ADD COLUMN cancel_ref TEXT;
-- migration: fleet/0004_release_catalog
CREATE TABLE release_catalog (
        product TEXT NOT NULL,
        version TEXT NOT NULL,
        channel TEXT NOT NULL,
        platform TEXT NOT NULL,
        revision TEXT NOT NULL,
        tree TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        manifest_sha256 TEXT NOT NULL,
        key_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        recorded_at BIGINT NOT NULL,
        PRIMARY KEY (product, version)
      );
CREATE TABLE release_reservations (
        product TEXT NOT NULL,
        version TEXT NOT NULL,
        platform TEXT NOT NULL,
        revision TEXT NOT NULL,
        reserved_at BIGINT NOT NULL,
        PRIMARY KEY (product, version, platform)
      );
-- migration: fleet/0005_job_idempotency_key
ALTER TABLE jobs ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
-- migration: fleet/0006_release_submissions
CREATE TABLE release_submissions (
        run_id TEXT PRIMARY KEY,
        product TEXT NOT NULL,
        version TEXT NOT NULL,
        channel TEXT NOT NULL,
        platform TEXT NOT NULL,
        revision TEXT NOT NULL,
        tree TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        source_size BIGINT NOT NULL,
        manifest_sha256 TEXT NOT NULL,
        submitted_at BIGINT NOT NULL
      );
-- migration: market/0005_coin_price_ids
CREATE TABLE market_coin_prices_with_ids (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        price INTEGER NOT NULL,
        source TEXT NOT NULL
      );
INSERT INTO market_coin_prices_with_ids (id, at, price, source)
        SELECT rowid, at, price, source FROM market_coin_prices;
DROP TABLE market_coin_prices;
ALTER TABLE market_coin_prices_with_ids RENAME TO market_coin_prices;
CREATE INDEX market_coin_prices_by_time ON market_coin_prices (at);
-- migration: platform/0005_objects_key_code_point_order
-- migration: market/0006_api_key_notify
