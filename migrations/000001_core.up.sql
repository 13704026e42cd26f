-- Core schema: tenants, memory users, keys, conversations, captured messages,
-- their immutable items, retrieval rows, frequency counts, activation, and the
-- per-tenant commit-ordered log that resident arenas catch up from.
-- Every tenant table carries tenant_id and leads its keys with it, so the
-- schema can be distributed by tenant_id without redesign.

CREATE TABLE tenants (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- API-standard user fields (OpenAI "user", Anthropic metadata.user_id)
    -- become the memory identity only when this is on.
    user_field_identity boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now()
);

-- The head of each tenant's log. Capture, purge and dictionary flips bump seq
-- inside their transaction; the row lock orders their commits, so "every row
-- with seq <= head" is a gap-free watermark for arena catch-up.
CREATE TABLE tenant_heads (
    tenant_id   bigint PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    seq         bigint NOT NULL DEFAULT 0,
    dict_version integer NOT NULL DEFAULT 1
);

CREATE TABLE memory_users (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    display_name text NOT NULL DEFAULT '',
    -- The user's clock, in model tokens processed. Wall time never moves it.
    clock        bigint NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);

CREATE TABLE api_keys (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    user_id      bigint NOT NULL,
    name         text NOT NULL DEFAULT '',
    prefix       text NOT NULL,
    key_hash     bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES memory_users (tenant_id, id) ON DELETE CASCADE
);

-- Key resolution is the one lookup that happens before the tenant is known.
-- It is a function so that it keeps working once row-level security is forced
-- on the tables.
CREATE FUNCTION resolve_api_key(h bytea)
RETURNS TABLE (tenant_id bigint, key_id bigint, user_id bigint, user_name text, user_field_identity boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT k.tenant_id, k.id, k.user_id, u.name, t.user_field_identity
    FROM api_keys k
    JOIN memory_users u ON u.tenant_id = k.tenant_id AND u.id = k.user_id
    JOIN tenants t ON t.id = k.tenant_id
    WHERE k.key_hash = h AND k.revoked_at IS NULL
$$;

CREATE TABLE conversations (
    tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    user_id    bigint NOT NULL,
    ext_key    text NOT NULL,
    title      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, user_id, ext_key),
    FOREIGN KEY (tenant_id, user_id) REFERENCES memory_users (tenant_id, id) ON DELETE CASCADE
);

-- One captured message: the unit that is stored whole or not at all.
CREATE TABLE messages (
    tenant_id       bigint NOT NULL,
    id              bigint GENERATED ALWAYS AS IDENTITY,
    user_id         bigint NOT NULL,
    conversation_id bigint NOT NULL,
    role            text NOT NULL CHECK (role IN ('user', 'assistant')),
    speaker         text NOT NULL DEFAULT '',
    -- Where the message sits in the harness's history; with the content it
    -- makes the fingerprint that keeps a retried request from storing twice.
    position        integer NOT NULL,
    fingerprint     bytea NOT NULL,
    interrupted     boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL,
    stored_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, conversation_id, fingerprint),
    FOREIGN KEY (tenant_id, conversation_id) REFERENCES conversations (tenant_id, id) ON DELETE CASCADE
);

-- Immutable items: a message's chunks, verbatim, with what retrieval needs.
CREATE TABLE items (
    tenant_id       bigint NOT NULL,
    id              bigint GENERATED ALWAYS AS IDENTITY,
    message_id      bigint NOT NULL,
    user_id         bigint NOT NULL,
    conversation_id bigint NOT NULL,
    role            text NOT NULL,
    speaker         text NOT NULL DEFAULT '',
    part            integer NOT NULL,
    body            text NOT NULL,
    tokens          text[] NOT NULL,
    token_count     integer NOT NULL,
    born_clock      bigint NOT NULL,
    born_at         timestamptz NOT NULL,
    tau             double precision NOT NULL CHECK (tau > 0),
    novelty         real NOT NULL,
    seq             bigint NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, message_id, part),
    FOREIGN KEY (tenant_id, message_id) REFERENCES messages (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX items_catchup ON items (tenant_id, seq);
CREATE INDEX items_conversation ON items (tenant_id, conversation_id, id);

-- The versioned dictionary: shipped as data, loaded with its version.
CREATE TABLE dictionaries (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    entries    integer NOT NULL,
    loaded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE dictionary_entries (
    version integer NOT NULL REFERENCES dictionaries (version) ON DELETE CASCADE,
    word    text NOT NULL,
    term_id integer NOT NULL,
    PRIMARY KEY (version, word)
);

-- One retrieval row per item and dictionary version, derived from items.tokens.
CREATE TABLE retrieval_rows (
    tenant_id    bigint NOT NULL,
    dict_version integer NOT NULL,
    item_id      bigint NOT NULL,
    term_ids     integer[] NOT NULL,
    term_freqs   smallint[] NOT NULL,
    length       integer NOT NULL,
    PRIMARY KEY (tenant_id, dict_version, item_id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id) ON DELETE CASCADE
);

-- Tenant-wide frequency statistic (document frequency per term).
CREATE TABLE term_stats (
    tenant_id    bigint NOT NULL,
    dict_version integer NOT NULL,
    term_id      integer NOT NULL,
    df           integer NOT NULL CHECK (df >= 0),
    PRIMARY KEY (tenant_id, dict_version, term_id)
);
CREATE TABLE corpus_stats (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    dict_version integer NOT NULL,
    items        bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, dict_version)
);

-- Activation per (viewer, item). Heat is computed from these values and the
-- item's tau; nothing is ever written to cool an item.
CREATE TABLE activations (
    tenant_id bigint NOT NULL,
    viewer_id bigint NOT NULL,
    item_id   bigint NOT NULL,
    t_last    bigint NOT NULL,
    peak      double precision NOT NULL,
    PRIMARY KEY (tenant_id, viewer_id, item_id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id) ON DELETE CASCADE
);

-- Events other than new items that a resident arena must apply in order:
-- purges and dictionary flips.
CREATE TABLE tenant_log (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    seq          bigint NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('purge', 'flip')),
    user_id      bigint,
    dict_version integer,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, seq)
);

-- Every adopted reheat, so the console can draw an item's heat over the
-- clock (born hot, reheats, decay). Written only by retrieval, beside the
-- activation patch it explains.
CREATE TABLE reheats (
    tenant_id bigint NOT NULL,
    viewer_id bigint NOT NULL,
    item_id   bigint NOT NULL,
    clock     bigint NOT NULL,
    peak      double precision NOT NULL,
    PRIMARY KEY (tenant_id, viewer_id, item_id, clock),
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id) ON DELETE CASCADE
);

-- One row per proxied request: the console's overview charts and usage.
CREATE TABLE requests (
    tenant_id     bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            bigint GENERATED ALWAYS AS IDENTITY,
    request_id    text NOT NULL,
    user_id       bigint,
    at            timestamptz NOT NULL DEFAULT now(),
    dialect       text NOT NULL,
    provider      text NOT NULL,
    model         text NOT NULL DEFAULT '',
    status        integer NOT NULL,
    streamed      boolean NOT NULL DEFAULT false,
    tokens_in     integer NOT NULL DEFAULT 0,
    tokens_out    integer NOT NULL DEFAULT 0,
    frame_items   integer NOT NULL DEFAULT 0,
    frame_tokens  integer NOT NULL DEFAULT 0,
    duration_ms   double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX requests_at ON requests (tenant_id, at);

-- The frame reads a viewer's activations that are recent enough to be warm.
CREATE INDEX activations_recent ON activations (tenant_id, viewer_id, t_last);
