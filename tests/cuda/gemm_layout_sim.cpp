// Host replay of gemm_tc's shared-memory layout (src_cuda/gemm_tc.cuh): for every
// operand layout and element size, fill a simulated stage the way the kernel's
// cp.async loop does, replay each warp's ldmatrix / scalar fragment loads with the
// PTX semantics of ldmatrix and of the mma.sync fragments, and check that every
// fragment element is the operand element the MMA expects, and that no load phase
// has a shared-memory bank conflict.  Prints "ok" and exits 0 when all hold.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gemm_tc.cuh"

static int failures = 0;
#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            if (failures++ < 20) std::printf(__VA_ARGS__); \
        }                                                  \
    } while (0)

// element values: a distinct id per (row, col) of the logical operand, < 2^16
static uint32_t aval(int m, int k) { return 1 + m * 64 + k; }
static uint32_t bval(int k, int n) { return 1 + n * 64 + k; }

struct Smem {
    std::vector<uint8_t> bytes;
    int E;
    void put(int elem, uint32_t v) { std::memcpy(&bytes[elem * E], &v, E); }
    uint32_t get(int elem) const {
        uint32_t v = 0;
        std::memcpy(&v, &bytes[elem * E], E);
        return v;
    }
    uint16_t half(int byte) const {
        uint16_t v;
        std::memcpy(&v, &bytes[byte], 2);
        return v;
    }
};

// ldmatrix.x4 (.trans): addr[l] = byte address of row (l & 7) of matrix l >> 3
static void ldsm(const Smem &s, const int addr[32], bool trans, uint32_t out[32][4]) {
    for (int j = 0; j < 4; j++) {
        int groups[8];
        for (int q = 0; q < 8; q++) groups[q] = (addr[j * 8 + q] / 16) % 8;
        for (int q = 0; q < 8; q++)
            for (int p = 0; p < q; p++)
                CHECK(groups[p] != groups[q], "ldmatrix bank conflict in matrix %d\n", j);
        for (int t = 0; t < 32; t++) {
            uint16_t lo, hi;
            if (!trans) {
                lo = s.half(addr[j * 8 + t / 4] + 4 * (t % 4));
                hi = s.half(addr[j * 8 + t / 4] + 4 * (t % 4) + 2);
            } else {
                lo = s.half(addr[j * 8 + 2 * (t % 4)] + 2 * (t / 4));
                hi = s.half(addr[j * 8 + 2 * (t % 4) + 1] + 2 * (t / 4));
            }
            out[t][j] = lo | (uint32_t)hi << 16;
        }
    }
}

static void scalar_banks(const int word[32], const char *what) {
    for (int q = 0; q < 32; q++)
        for (int p = 0; p < q; p++)
            CHECK(word[p] == word[q] || word[p] % 32 != word[q] % 32, "bank conflict: %s\n", what);
}

// (m, k) of A-fragment register r, half h of thread t; (k, n) of B register r, half h
static void a_coord(int E, int t, int r, int h, int &m, int &k) {
    const int g = t / 4, q = t % 4;
    m = g + 8 * (r & 1);
    k = E == 2 ? 2 * q + h + 8 * (r >> 1) : q + 4 * (r >> 1);
}
static void b_coord(int E, int t, int r, int h, int &k, int &n) {
    const int g = t / 4, q = t % 4;
    n = g;
    k = E == 2 ? 2 * q + h + 8 * r : q + 4 * r;
}

static uint32_t part(int E, uint32_t reg, int h) { return E == 4 ? reg : (h ? reg >> 16 : reg & 0xffff); }

static void run(int E, bool TA, bool TB) {
    const int V = 16 / E, BK = 64 / E, WA = TC_BM * E / 16, WB = TC_BN * E / 16;
    const int A_CH = TC_BM * TC_KCH, B_CH = TC_BN * TC_KCH;
    const bool F32 = E == 4;
    Smem s{std::vector<uint8_t>((A_CH + B_CH) * 16), E};
    std::vector<int> seen(A_CH + B_CH, 0);
    // the kernel's cp.async loop: chunk e -> slot, V elements along the row
    for (int e = 0; e < A_CH; e++) {
        int slot, m, k;
        if (TA) { int r = e / WA, c = e % WA; slot = tc_mn(r, c, WA, F32); k = r; m = c * V; }
        else { int r = e / TC_KCH, c = e % TC_KCH; slot = tc_kc(r, c); m = r; k = c * V; }
        CHECK(slot >= 0 && slot < A_CH && !seen[slot]++, "A slot %d reused\n", slot);
        for (int v = 0; v < V; v++) s.put(slot * V + v, TA ? aval(m + v, k) : aval(m, k + v));
    }
    for (int e = 0; e < B_CH; e++) {
        int slot, n, k;
        if (TB) { int r = e / TC_KCH, c = e % TC_KCH; slot = tc_kc(r, c); n = r; k = c * V; }
        else { int r = e / WB, c = e % WB; slot = tc_mn(r, c, WB, F32); k = r; n = c * V; }
        CHECK(slot >= 0 && slot < B_CH && !seen[A_CH + slot]++, "B slot %d reused\n", slot);
        for (int v = 0; v < V; v++)
            s.put(A_CH * V + slot * V + v, TB ? bval(k + v, n) : bval(k, n + v));
    }
    const int sb = A_CH * 16;   // byte offset of B
    for (int warp = 0; warp < 8; warp++) {
        const int wm = warp >> 2, wn = warp & 3;
        for (int st = 0; st < TC_KCH / 2; st++) {
            const int kb = st * (32 / E);   // first k of this MMA step
            for (int i = 0; i < 4; i++) {
                const int mb = wm * 64 + i * 16;
                uint32_t a[32][4];
                if (!TA || !F32) {
                    int addr[32];
                    for (int l = 0; l < 32; l++)
                        addr[l] = 16 * (TA ? tc_a_mn(l, mb, st, WA) : tc_a_kc(l, mb, st));
                    ldsm(s, addr, TA, a);
                } else {
                    for (int r = 0; r < 4; r++) {
                        int word[32];
                        for (int t = 0; t < 32; t++) {
                            const int g = t >> 2, q = t & 3;
                            const int k = 8 * st + q + 4 * (r >> 1), m = mb + g + 8 * (r & 1);
                            word[t] = tc_mn_f32(k, m, WA);
                            a[t][r] = s.get(word[t]);
                        }
                        scalar_banks(word, "tf32 A");
                    }
                }
                for (int t = 0; t < 32; t++)
                    for (int r = 0; r < 4; r++)
                        for (int h = 0; h < (E == 2 ? 2 : 1); h++) {
                            int m, k;
                            a_coord(E, t, r, h, m, k);
                            CHECK(part(E, a[t][r], h) == aval(mb + m, kb + k),
                                  "E%d TA%d TB%d A warp %d step %d tile %d lane %d reg %d.%d\n",
                                  E, TA, TB, warp, st, i, t, r, h);
                        }
            }
            for (int jp = 0; jp < 4; jp++) {
                const int nb = wn * 64 + jp * 16;
                uint32_t b[2][32][2];
                if (TB || !F32) {
                    int addr[32];
                    uint32_t r4[32][4];
                    for (int l = 0; l < 32; l++)
                        addr[l] = sb + 16 * (TB ? tc_b_kc(l, nb, st) : tc_b_mn(l, nb, st, WB));
                    ldsm(s, addr, !TB, r4);
                    for (int t = 0; t < 32; t++)
                        for (int h = 0; h < 2; h++)
                            for (int r = 0; r < 2; r++) b[h][t][r] = r4[t][2 * h + r];
                } else {
                    for (int h = 0; h < 2; h++)
                        for (int r = 0; r < 2; r++) {
                            int word[32];
                            for (int t = 0; t < 32; t++) {
                                const int k = 8 * st + (t & 3) + 4 * r, n = nb + 8 * h + (t >> 2);
                                word[t] = A_CH * 4 + tc_mn_f32(k, n, WB);
                                b[h][t][r] = s.get(word[t]);
                            }
                            scalar_banks(word, "tf32 B");
                        }
                }
                for (int h = 0; h < 2; h++)
                    for (int t = 0; t < 32; t++)
                        for (int r = 0; r < 2; r++)
                            for (int hh = 0; hh < (E == 2 ? 2 : 1); hh++) {
                                int k, n;
                                b_coord(E, t, r, hh, k, n);
                                CHECK(part(E, b[h][t][r], hh) == bval(kb + k, nb + 8 * h + n),
                                      "E%d TA%d TB%d B warp %d step %d pair %d.%d lane %d reg %d.%d\n",
                                      E, TA, TB, warp, st, jp, h, t, r, hh);
                            }
            }
        }
    }
    (void)BK;
}

// ---- gemm_ws: where the wgmma descriptors read each element (PTX ISA, "Shared
// Memory Matrix Layout": canonical 128-byte-swizzle layouts, swizzle applied to the
// byte address) against where the TMA boxes put it (wg_kmaj / wg_mnmaj: one box of
// 128-byte rows per K-major tile, 64-column boxes WG_MN_LBO apart per MN-major one).
// Tiles start on 1024-byte boundaries, as in the kernel.
static int sw128(int addr) { return addr ^ (((addr >> 7) & 7) << 4); }
// K-major: element (row i, k j) at start + (i % 8) * 128 + (i / 8) * SBO + 2 j
static int kmaj_addr(int start, int i, int j) { return sw128(start + (i % 8) * 128 + (i / 8) * 1024 + 2 * j); }
// MN-major: element (mn i, k j) at start + 2 (i % 64) + (i / 64) * LBO + (j % 8) * 128 + (j / 8) * SBO
static int mnmaj_addr(int start, int i, int j) {
    return sw128(start + 2 * (i % 64) + (i / 64) * WG_MN_LBO + (j % 8) * 128 + (j / 8) * 1024);
}

static void run_wgmma(bool TA, bool TB) {
    const int V = 8, TILE_A = TC_BM * WG_BK * 2, TILE_B = TC_BN * WG_BK * 2;
    std::vector<uint16_t> sm((TILE_A + TILE_B) / 2, 0);
    std::vector<int> seen((TILE_A + TILE_B) / 16, 0);
    for (int e = 0; e < TILE_A / 16; e++) {
        int off, m, k;
        if (TA) { int r = e / (TC_BM / V), c = e % (TC_BM / V); off = wg_mnmaj(r, c); k = r; m = c * V; }
        else { int r = e / (WG_BK / V), c = e % (WG_BK / V); off = wg_kmaj(r, c); m = r; k = c * V; }
        CHECK(off % 16 == 0 && off >= 0 && off < TILE_A && !seen[off / 16]++, "wgmma A chunk %d\n", e);
        for (int v = 0; v < V; v++) sm[off / 2 + v] = TA ? aval(m + v, k) : aval(m, k + v);
    }
    for (int e = 0; e < TILE_B / 16; e++) {
        int off, n, k;
        if (TB) { int r = e / (WG_BK / V), c = e % (WG_BK / V); off = wg_kmaj(r, c); n = r; k = c * V; }
        else { int r = e / (TC_BN / V), c = e % (TC_BN / V); off = wg_mnmaj(r, c); k = r; n = c * V; }
        CHECK(off % 16 == 0 && off >= 0 && off < TILE_B && !seen[TILE_A / 16 + off / 16]++,
              "wgmma B chunk %d\n", e);
        for (int v = 0; v < V; v++) sm[(TILE_A + off) / 2 + v] = TB ? bval(k + v, n) : bval(k, n + v);
    }
    const int sa = 0, sb = TILE_A;
    for (int wg = 0; wg < 2; wg++)
        for (int s = 0; s < WG_BK / 16; s++) {
            // the kernel's descriptor start addresses
            const int da = TA ? sa + wg * WG_MN_LBO + s * 2048 : sa + wg * 64 * 128 + s * 32;
            const int db = TB ? sb + s * 32 : sb + s * 2048;
            for (int i = 0; i < 64; i++)
                for (int j = 0; j < 16; j++) {
                    const int ad = TA ? mnmaj_addr(da, i, j) : kmaj_addr(da, i, j);
                    CHECK(sm[ad / 2] == aval(wg * 64 + i, 16 * s + j),
                          "wgmma TA%d TB%d A wg %d step %d (%d, %d)\n", TA, TB, wg, s, i, j);
                }
            for (int n = 0; n < TC_BN; n++)
                for (int j = 0; j < 16; j++) {
                    const int ad = TB ? kmaj_addr(db, n, j) : mnmaj_addr(db, n, j);
                    CHECK(sm[ad / 2] == bval(16 * s + j, n),
                          "wgmma TA%d TB%d B step %d (k %d, n %d)\n", TA, TB, s, j, n);
                }
        }
}

int main() {
    for (int E : {2, 4})
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) run(E, ta, tb);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) run_wgmma(ta, tb);
    if (failures) {
        std::printf("%d failures\n", failures);
        return 1;
    }
    std::printf("ok\n");
    return 0;
}
