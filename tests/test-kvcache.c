/* Paged KV cache bookkeeping: block math, all-or-nothing reserve, reuse of
 * released blocks, and misuse that must not corrupt the free list. */
#include "kvcache.h"
#include "error.h"
#include "testutil.h"

#include <limits.h>
#include <string.h>

static void test_blocks_for(void)
{
    g_autoptr(hyocr_kv_pool) pool = hyocr_kv_pool_init(4, 16);
    g_assert_cmpint(hyocr_kv_pool_block_size(pool), ==, 16);
    g_assert_cmpint(hyocr_kv_pool_n_blocks(pool), ==, 4);
    g_assert_cmpint(hyocr_kv_pool_blocks_for(pool, 0), ==, 0);
    g_assert_cmpint(hyocr_kv_pool_blocks_for(pool, -5), ==, 0);
    g_assert_cmpint(hyocr_kv_pool_blocks_for(pool, 1), ==, 1);
    g_assert_cmpint(hyocr_kv_pool_blocks_for(pool, 16), ==, 1);
    g_assert_cmpint(hyocr_kv_pool_blocks_for(pool, 17), ==, 2);
    g_assert_cmpint(hyocr_kv_pool_blocks_for(pool, 32), ==, 2);
    g_assert_cmpint(hyocr_kv_pool_blocks_for(pool, 33), ==, 3);
    g_assert_cmpint(hyocr_kv_pool_blocks_for(pool, INT_MAX), ==, INT_MAX / 16 + 1);
}

static void reserve_ok(hyocr_kv_pool *pool, hyocr_kv_seq *seq, int n)
{
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_kv_seq_reserve(pool, seq, n, &err));
    g_assert_no_error(err);
    hyocr_kv_seq_commit(seq, n);
}

static void test_reserve_grows(void)
{
    g_autoptr(hyocr_kv_pool) pool = hyocr_kv_pool_init(8, 4);
    hyocr_kv_seq a;
    hyocr_kv_seq_init(&a);
    g_assert_cmpint(a.n_blocks, ==, 0);

    reserve_ok(pool, &a, 10);
    g_assert_cmpint(a.n_blocks, ==, 3);
    g_assert_cmpint(a.n_tokens, ==, 10);
    g_assert_cmpint(hyocr_kv_seq_capacity(pool, &a), ==, 12);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 5);

    /* Room left in the last block: no new block. Reserving twice is idempotent. */
    g_assert_true(hyocr_kv_seq_reserve(pool, &a, 2, NULL));
    g_assert_true(hyocr_kv_seq_reserve(pool, &a, 2, NULL));
    g_assert_cmpint(a.n_blocks, ==, 3);
    hyocr_kv_seq_commit(&a, 2);
    g_assert_true(hyocr_kv_seq_reserve(pool, &a, 0, NULL));
    g_assert_cmpint(a.n_blocks, ==, 3);

    reserve_ok(pool, &a, 1);
    g_assert_cmpint(a.n_blocks, ==, 4);
    g_assert_cmpint(a.n_tokens, ==, 13);

    hyocr_kv_seq_release(pool, &a);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 8);
    g_assert_cmpint(a.n_blocks, ==, 0);
    g_assert_cmpint(a.n_tokens, ==, 0);
    g_assert_null(a.blocks);
    hyocr_kv_seq_release(pool, &a);   /* emptied: a second release is a no-op */
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 8);
}

/* Released blocks are handed out again before untouched ones. */
static void test_reuse(void)
{
    g_autoptr(hyocr_kv_pool) pool = hyocr_kv_pool_init(8, 4);
    hyocr_kv_seq a, b, c;
    hyocr_kv_seq_init(&a);
    hyocr_kv_seq_init(&b);
    hyocr_kv_seq_init(&c);
    reserve_ok(pool, &a, 12);    /* 3 blocks */
    reserve_ok(pool, &b, 4);     /* 1 block */
    int32_t a_blocks[3];
    memcpy(a_blocks, a.blocks, sizeof a_blocks);
    hyocr_kv_seq_release(pool, &a);

    reserve_ok(pool, &c, 12);
    g_assert_cmpint(c.n_blocks, ==, 3);
    for (int i = 0; i < 3; i++) {
        bool found = false;
        for (int j = 0; j < 3; j++) found |= c.blocks[i] == a_blocks[j];
        g_assert_true(found);
    }
    /* Token → slot follows c's table: block · 4 + offset, -1 outside it. */
    for (int pos = 0; pos < 12; pos++)
        g_assert_cmpint(hyocr_kv_seq_slot(pool, &c, pos), ==, (int64_t)c.blocks[pos / 4] * 4 + pos % 4);
    g_assert_cmpint(hyocr_kv_seq_slot(pool, &c, 12), ==, -1);
    g_assert_cmpint(hyocr_kv_seq_slot(pool, &c, -1), ==, -1);
    g_assert_cmpint(hyocr_kv_seq_slot(pool, &c, 0), !=, hyocr_kv_seq_slot(pool, &b, 0));

    hyocr_kv_seq_release(pool, &b);
    hyocr_kv_seq_release(pool, &c);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 8);
}

static void assert_seq_equal(const hyocr_kv_seq *x, const hyocr_kv_seq *y)
{
    g_assert_cmpint(x->n_blocks, ==, y->n_blocks);
    g_assert_cmpint(x->n_tokens, ==, y->n_tokens);
    g_assert_cmpmem(x->blocks, x->n_blocks * sizeof(int32_t), y->blocks, y->n_blocks * sizeof(int32_t));
}

static void test_out_of_blocks(void)
{
    g_autoptr(hyocr_kv_pool) pool = hyocr_kv_pool_init(4, 16);
    hyocr_kv_seq a, b;
    hyocr_kv_seq_init(&a);
    hyocr_kv_seq_init(&b);
    reserve_ok(pool, &a, 40);                 /* 3 of 4 blocks */

    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_kv_seq_reserve(pool, &b, 40, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_assert_nonnull(strstr(err->message, "KV cache full: need 3 more blocks of 16 tokens, 1 free of 4"));
    g_assert_cmpint(b.n_blocks, ==, 0);
    g_assert_cmpint(b.n_tokens, ==, 0);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 1);

    /* A sequence that already holds blocks is left exactly as it was. */
    hyocr_kv_seq before = a;
    g_autofree int32_t *saved = g_memdup2(a.blocks, a.n_blocks * sizeof(int32_t));
    before.blocks = saved;
    g_clear_error(&err);
    g_assert_false(hyocr_kv_seq_reserve(pool, &a, 30, &err));   /* 70 tokens: 5 blocks */
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_assert_nonnull(strstr(err->message, "need 2 more blocks of 16 tokens, 1 free of 4"));
    assert_seq_equal(&a, &before);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 1);

    /* Absurd requests fail the same way instead of overflowing. */
    g_clear_error(&err);
    g_assert_false(hyocr_kv_seq_reserve(pool, &a, INT_MAX, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    assert_seq_equal(&a, &before);

    g_clear_error(&err);
    g_assert_false(hyocr_kv_seq_reserve(pool, &a, -1, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    assert_seq_equal(&a, &before);

    /* Once a releases, b fits. */
    hyocr_kv_seq_release(pool, &a);
    reserve_ok(pool, &b, 40);
    hyocr_kv_seq_release(pool, &b);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 4);
}

static void check_invariants(hyocr_kv_pool *pool, hyocr_kv_seq *seqs, int n_seqs)
{
    const int n_blocks = hyocr_kv_pool_n_blocks(pool);
    g_autofree bool *owned = g_new0(bool, n_blocks);
    int used = 0;
    for (int s = 0; s < n_seqs; s++) {
        g_assert_cmpint(seqs[s].n_blocks, ==, hyocr_kv_pool_blocks_for(pool, seqs[s].n_tokens));
        for (int i = 0; i < seqs[s].n_blocks; i++) {
            int32_t b = seqs[s].blocks[i];
            g_assert_cmpint(b, >=, 0);
            g_assert_cmpint(b, <, n_blocks);
            g_assert_false(owned[b]);   /* never handed to two sequences */
            owned[b] = true;
            used++;
        }
    }
    g_assert_cmpint(used + hyocr_kv_pool_n_free(pool), ==, n_blocks);
}

static void test_interleaved(void)
{
    enum { N_SEQS = 10 };
    g_autoptr(hyocr_kv_pool) pool = hyocr_kv_pool_init(64, 8);
    g_autoptr(GRand) r = g_rand_new_with_seed(2024);
    hyocr_kv_seq seqs[N_SEQS];
    for (int s = 0; s < N_SEQS; s++) hyocr_kv_seq_init(&seqs[s]);
    int failures = 0, releases = 0;

    for (int op = 0; op < 5000; op++) {
        int s = g_rand_int_range(r, 0, N_SEQS);
        if (g_rand_int_range(r, 0, 10) == 0) {
            hyocr_kv_seq_release(pool, &seqs[s]);
            releases++;
        } else {
            int n = g_rand_int_range(r, 1, 40);
            int blocks_before = seqs[s].n_blocks, tokens_before = seqs[s].n_tokens;
            g_autoptr(GError) err = NULL;
            if (hyocr_kv_seq_reserve(pool, &seqs[s], n, &err)) {
                hyocr_kv_seq_commit(&seqs[s], n);
            } else {
                g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
                g_assert_cmpint(seqs[s].n_blocks, ==, blocks_before);
                g_assert_cmpint(seqs[s].n_tokens, ==, tokens_before);
                failures++;
            }
        }
        check_invariants(pool, seqs, N_SEQS);
    }
    g_assert_cmpint(failures, >, 0);   /* the pool really ran dry along the way */
    g_assert_cmpint(releases, >, 0);
    for (int s = 0; s < N_SEQS; s++) hyocr_kv_seq_release(pool, &seqs[s]);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 64);
}

/* A stale copy of a released table and a foreign table are refused loudly and
 * leave the free list intact. */
static void test_misuse(void)
{
    g_autoptr(hyocr_kv_pool) pool = hyocr_kv_pool_init(4, 4);
    hyocr_kv_seq a;
    hyocr_kv_seq_init(&a);
    reserve_ok(pool, &a, 8);
    hyocr_kv_seq stale = a;
    stale.blocks = g_memdup2(a.blocks, a.n_blocks * sizeof(int32_t));
    hyocr_kv_seq_release(pool, &a);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 4);

    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*already free (double release)*");
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*already free (double release)*");
    hyocr_kv_seq_release(pool, &stale);
    g_test_assert_expected_messages();
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 4);

    hyocr_kv_seq foreign = { .blocks = g_new(int32_t, 2), .n_blocks = 2, .cap = 2, .n_tokens = 5 };
    foreign.blocks[0] = 99;
    foreign.blocks[1] = -3;
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*block id 99 is outside the pool*");
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*block id -3 is outside the pool*");
    hyocr_kv_seq_release(pool, &foreign);
    g_test_assert_expected_messages();
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 4);

    /* Still four distinct blocks to hand out. */
    hyocr_kv_seq x, y;
    hyocr_kv_seq_init(&x);
    hyocr_kv_seq_init(&y);
    reserve_ok(pool, &x, 8);
    reserve_ok(pool, &y, 8);
    hyocr_kv_seq both[2] = { x, y };
    check_invariants(pool, both, 2);
    g_assert_cmpint(hyocr_kv_pool_n_free(pool), ==, 0);
    hyocr_kv_seq_release(pool, &x);
    hyocr_kv_seq_release(pool, &y);

    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*n_blocks > 0*");
    g_assert_null(hyocr_kv_pool_init(0, 16));
    g_test_assert_expected_messages();
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*block_size > 0*");
    g_assert_null(hyocr_kv_pool_init(4, -1));
    g_test_assert_expected_messages();
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kvcache/blocks-for", test_blocks_for);
    g_test_add_func("/kvcache/reserve-grows", test_reserve_grows);
    g_test_add_func("/kvcache/reuse", test_reuse);
    g_test_add_func("/kvcache/out-of-blocks", test_out_of_blocks);
    g_test_add_func("/kvcache/interleaved", test_interleaved);
    g_test_add_func("/kvcache/misuse", test_misuse);
    return g_test_run();
}
