//! The two migration dialects describe one schema: applied to SQLite and to
//! PostgreSQL, they give the same tables, columns (with the same type
//! family and nullability), indexes (table, uniqueness, columns, and the
//! names of the explicit ones) and foreign keys. Runs when
//! `AEGIS_TEST_POSTGRES_URL` names a cluster.

use std::collections::BTreeSet;

use super::fixture::*;

/// One line per column, index and foreign key, in dialect-neutral words,
/// of the store after opening it.
async fn schema_of(fixture: &Fixture) -> BTreeSet<String> {
    fixture.open().await;
    schema_lines(fixture).await
}

/// One line per column, index and foreign key of the database as it is.
pub async fn schema_lines(fixture: &Fixture) -> BTreeSet<String> {
    let queries: &[&str] = match fixture.location() {
        StoreLocation::Sqlite(_) => &[
            // Columns: a primary key column is NOT NULL in PostgreSQL.
            "SELECT 'column ' || m.name || '.' || p.name || ' ' || lower(p.type) || ' ' || \
             (CASE WHEN p.\"notnull\" OR p.pk > 0 THEN 'not null' ELSE 'null' END) \
             FROM sqlite_master m JOIN pragma_table_info(m.name) p \
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> '_sqlx_migrations'",
            "SELECT 'index ' || m.name || ' ' || il.\"unique\" || ' ' || \
             (SELECT group_concat(ii.name, ',') FROM (SELECT name FROM pragma_index_info(il.name) ORDER BY seqno) ii) \
             FROM sqlite_master m JOIN pragma_index_list(m.name) il \
             WHERE m.type = 'table' AND m.name <> '_sqlx_migrations' AND il.origin <> 'pk'",
            "SELECT 'named index ' || name FROM sqlite_master \
             WHERE type = 'index' AND sql IS NOT NULL",
            "SELECT 'foreign key ' || m.name || '.' || f.\"from\" || ' -> ' || f.\"table\" || '.' || f.\"to\" || ' ' || lower(f.on_delete) \
             FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE m.type = 'table'",
        ],
        StoreLocation::Postgres(_) => &[
            "SELECT 'column ' || table_name || '.' || column_name || ' ' || \
             (CASE WHEN data_type IN ('bigint', 'integer', 'smallint') THEN 'integer' ELSE data_type END) || ' ' || \
             (CASE WHEN is_nullable = 'NO' THEN 'not null' ELSE 'null' END) \
             FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations'",
            "SELECT 'index ' || t.relname || ' ' || (CASE WHEN ix.indisunique THEN 1 ELSE 0 END) || ' ' || \
             string_agg(a.attname, ',' ORDER BY k.ord) \
             FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid \
             JOIN pg_namespace n ON n.oid = t.relnamespace \
             CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord) \
             JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum \
             WHERE n.nspname = 'public' AND NOT ix.indisprimary AND t.relname <> '_sqlx_migrations' \
             GROUP BY t.relname, ix.indexrelid, ix.indisunique",
            // Explicit indexes; those of UNIQUE constraints are named `…_key`.
            "SELECT 'named index ' || indexname FROM pg_indexes \
             WHERE schemaname = 'public' AND tablename <> '_sqlx_migrations' \
             AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key'",
            "SELECT 'foreign key ' || c.conrelid::regclass::text || '.' || a.attname || ' -> ' || \
             c.confrelid::regclass::text || '.' || af.attname || ' ' || \
             (CASE c.confdeltype WHEN 'c' THEN 'cascade' WHEN 'n' THEN 'set null' WHEN 'r' THEN 'restrict' ELSE 'no action' END) \
             FROM pg_constraint c \
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] \
             JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = c.confkey[1] \
             WHERE c.contype = 'f'",
        ],
    };
    let mut lines = BTreeSet::new();
    for sql in queries {
        lines.extend(fixture.raw_texts(sql).await);
    }
    lines
}

pub async fn both_dialects_give_the_same_schema(postgres: &Fixture) {
    let sqlite = Fixture::sqlite();
    let (lite, pg) = (schema_of(&sqlite).await, schema_of(postgres).await);
    for kind in ["column grants.", "index ", "named index ", "foreign key "] {
        assert!(
            lite.iter().any(|l| l.starts_with(kind)),
            "no {kind}: {lite:#?}"
        );
    }
    let only_sqlite: Vec<&String> = lite.difference(&pg).collect();
    let only_postgres: Vec<&String> = pg.difference(&lite).collect();
    assert!(
        only_sqlite.is_empty() && only_postgres.is_empty(),
        "the dialects differ\n  only in SQLite: {only_sqlite:#?}\n  only in PostgreSQL: {only_postgres:#?}"
    );
}
