/* Special functions (ember.special): scalar double-precision implementations and
   their float32/float64 strided loops.  No Python here.

   float32 inputs are evaluated in double and rounded once, so a float32 result
   is within about one ulp wherever the double algorithm is accurate; the loops
   run element by element (most of these functions branch per element, so they
   gain little from SIMD), and em_run_nd splits large tensors across threads.

   Provenance: the algorithms and coefficient tables below are the ones PyTorch
   uses (ATen/native/Math.h), ported to C:
   - zeta, digamma, i0/i0e/i1/i1e, ndtri, airy_ai, Bessel J/Y/I/K: derived from
     the Cephes Math Library, Copyright (c) 2018, Steven Moshier, 3-clause BSD
     licence (redistribution with this notice; no endorsement; provided "as is",
     without warranty of any kind).
   - igamma/igammac: derived from SciPy's gammainc (Cephes igam/igamc, Temme's
     uniform asymptotic expansion) and Boost's Lanczos sum (Copyright John
     Maddock 2006, Boost Software License 1.0).
   - erfcx: Steven G. Johnson's Faddeeva package, Copyright (c) 2012
     Massachusetts Institute of Technology, MIT licence.
   - erfinv (float64): Gary L. Pavlis' rational approximation with Newton steps,
     Copyright (c) 2014 Indiana University, New BSD licence. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "ember_special.h"
#include "ember_math.h"
#include "special_bessel_tables.h"   /* the Cephes tables, shared with the vector loops */
#include "special_loop.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif
#ifndef M_2_SQRTPI
#define M_2_SQRTPI 1.12837916709551257390
#endif

static double polevl(const double x, const double A[], size_t len);

/* a^-s for an integer s >= 1 by squaring: within about log2(s) ulps */
static inline double sp_pow_negint(double a, int s) {
  double r = 1.0, b = a;
  for (; s; s >>= 1) {
    if (s & 1) r *= b;
    b *= b;
  }
  return 1.0 / r;
}

/* Hurwitz zeta; POWI: x is an integer in [2, 64] and q in [1/64, 1e4], where the
   powers come from sp_pow_negint (no overflow or underflow there) instead of pow */
static inline __attribute__((always_inline)) double sp_zeta_impl(double x, double q,
                                                                 int POWI)  {
  
  const double MACHEP = ((double)(1.11022302462515654042E-16));
  const double zero = ((double)(0.0));
  const double half = ((double)(0.5));
  const double one = ((double)(1.0));
  static const double A[] = {
      12.0,
      -720.0,
      30240.0,
      -1209600.0,
      47900160.0,
      -1.8924375803183791606e9, /*1.307674368e12/691*/
      7.47242496e10,
      -2.950130727918164224e12, /*1.067062284288e16/3617*/
      1.1646782814350067249e14, /*5.109094217170944e18/43867*/
      -4.5979787224074726105e15, /*8.028576626982912e20/174611*/
      1.8152105401943546773e17, /*1.5511210043330985984e23/854513*/
      -7.1661652561756670113e18 /*1.6938241367317436694528e27/236364091*/
  };

  double a, b, k, s, t, w;
  if (x == one) {
    return INFINITY;
  }

  if (x < one) {
    return NAN;
  }

  if (q <= zero) {
    if (q == floor(q)) {
      return INFINITY;
    }
    if (x != floor(x)) {
      return NAN;
    }
  }

  s = POWI ? sp_pow_negint(q, (int)x) : pow(q, -x);
  a = q;
  int i = 0;
  b = zero;
  while ((i < 9) || (a <= ((double)(9.0)))) {
    i += 1;
    a += one;
    b = POWI ? sp_pow_negint(a, (int)x) : pow(a, -x);
    s += b;
    if ((-MACHEP * s < b) && (b < MACHEP * s)) {
      return (double)(s);
    }
  };

  w = a;
  s += b * w / (x - one);
  s -= half * b;
  a = one;
  k = zero;
  for (i = 0; i < 12; i++) {
    a *= x + k;
    b /= w;
    t = a * b / A[i];
    s = s + t;
    t = fabs(t / s);
    if (t < MACHEP) {
      return (double)(s);
    }
    k += one;
    a *= x + k;
    b /= w;
    k += one;
  }
  return (double)(s);
}

static double sp_zeta(double x, double q) {
  return sp_zeta_impl(x, q, 0);
}

static double polevl(const double x, const double A[], size_t len) {
  double result = 0;
  for (size_t i = 0; i <= len; i++) {
    result = result * x + A[i];
  }
  return result;
}

static double sp_trigamma(double x)  {
  double sign = +1;
  double result = 0;
  if (x < 0.5) {
    sign = -1;
    const double sin_pi_x = sin(M_PI * x);
    result -= (M_PI * M_PI) / (sin_pi_x * sin_pi_x);
    x = 1 - x;
  }
  /* recurrence up to x >= 20, then the asymptotic series through B10: full double
     precision (PyTorch stops at x >= 6 and B6, about 1e-9 relative) */
  while (x < 20) {
    result += 1 / (x * x);
    x += 1;
  }
  const double ixx = 1 / (x*x);
  result += (1 + 1 / (2*x) + ixx * (1./6 - ixx * (1./30 - ixx * (1./42 - ixx * (1./30
             - ixx * (5./66)))))) / x;
  return sign * result;
}

static double sp_digamma(double x) {
  // [C++ Standard Reference: Gamma Function] https://en.cppreference.com/w/cpp/numeric/math/tgamma
 static double PSI_10 = 2.25175258906672110764;
  if (x == 0) {
    // As per C++ standard for gamma related functions and SciPy,
    // If the argument is ±0, ±∞ is returned
    return copysign(INFINITY, -x);
  }

  int x_is_integer = x == trunc(x);
  if (x < 0) {
    if (x_is_integer) {
      // As per C++ standard for gamma related functions and SciPy,
      // If the argument is a negative integer, NaN is returned
      return NAN;
    }
    // Extracts the fractional part of x as r, since tan(pi * r) is more numerically
    // accurate than tan(pi * x). While these operations are mathematically equivalent
    // since both x and r are in radians and tan() has a periodicity of pi, in practice
    // the computation of pi * x is a source of error (when |x| > 1).
    double q, r;
    r = modf(x, &q);
    return sp_digamma(1 - x) - M_PI / tan(M_PI * r);
  }

  // Push x to be >= 10
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) {
    return result + PSI_10;
  }

  // Compute asymptotic digamma
  static const double A[] = {
      8.33333333333333333333E-2,
      -2.10927960927960927961E-2,
      7.57575757575757575758E-3,
      -4.16666666666666666667E-3,
      3.96825396825396825397E-3,
      -8.33333333333333333333E-3,
      8.33333333333333333333E-2,
  };

  double y = 0;
  if (x < 1.0e17) {
    double z = 1.0 / (x * x);
    y = z * polevl(z, A, 6);
  }
  return result + log(x) - (0.5 / x) - y;
}

static double ratevl(double x, const double num[], int64_t M,
    const double denom[], int64_t N) {
  // evaluating rational function, i.e., the ratio of two polynomials
  // the coefficients for numerator are given by `num` while coeffs for
  // denumerator are given by `denom`

  int64_t i, dir;
  double y, num_ans, denom_ans;
  double absx = fabs(x);
  const double *p;

  if (absx > 1) {
    /* Evaluate as a polynomial in 1/x. */
    dir = -1;
    p = num + M;
    y = 1 / x;
  }
  else {
    dir = 1;
    p = num;
    y = x;
  }

  /* Evaluate the numerator */
  num_ans = *p;
  p += dir;
  for (i = 1; i <= M; i++) {
    num_ans = num_ans * y + *p;
    p += dir;
  }
  /* Evaluate the denominator */
  if (absx > 1) {
    p = denom + N;
  }
  else {
    p = denom;
  }

  denom_ans = *p;
  p += dir;
  for (i = 1; i <= N; i++) {
    denom_ans = denom_ans * y + *p;
    p += dir;
  }
  if (absx > 1) {
    i = N - M;
    return pow(x, i) * num_ans / denom_ans;
  }
  else {
    return num_ans / denom_ans;
  }
}
/* (C) Copyright John Maddock 2006.
 * Use, modification and distribution are subject to the
 * Boost Software License, Version 1.0. See
 * https://www.boost.org/LICENSE_1_0.txt or see NOTICE.
 */

static double lanczos_sum_expg_scaled(double x) {
  // lanczos approximation
  static const double lanczos_sum_expg_scaled_num[13] = {
    0.006061842346248906525783753964555936883222,
    0.5098416655656676188125178644804694509993,
    19.51992788247617482847860966235652136208,
    449.9445569063168119446858607650988409623,
    6955.999602515376140356310115515198987526,
    75999.29304014542649875303443598909137092,
    601859.6171681098786670226533699352302507,
    3481712.15498064590882071018964774556468,
    14605578.08768506808414169982791359218571,
    43338889.32467613834773723740590533316085,
    86363131.28813859145546927288977868422342,
    103794043.1163445451906271053616070238554,
    56906521.91347156388090791033559122686859
  };
  static const double lanczos_sum_expg_scaled_denom[13] = {
    1.,
    66.,
    1925.,
    32670.,
    357423.,
    2637558.,
    13339535.,
    45995730.,
    105258076.,
    150917976.,
    120543840.,
    39916800.,
    0.
  };
  return ratevl(x, lanczos_sum_expg_scaled_num,
      sizeof(lanczos_sum_expg_scaled_num) / sizeof(lanczos_sum_expg_scaled_num[0]) - 1,
      lanczos_sum_expg_scaled_denom,
      sizeof(lanczos_sum_expg_scaled_denom) / sizeof(lanczos_sum_expg_scaled_denom[0]) - 1);
}

static double _igam_helper_fac(double a, double x) {
  // compute x^a * exp(-a) / gamma(a)
  // corrected from (15) and (16) in [igam2] by replacing exp(x - a) with
  // exp(a - x).

  double ax, fac, res, num, numfac;
 static double MAXLOG = 7.09782712893383996843E2;
 static double EXP1 = 2.718281828459045;
 static double lanczos_g = 6.024680040776729583740234375;

  if (fabs(a - x) > 0.4 * fabs(a)) {
    ax = a * log(x) - x - lgamma(a);
    if (ax < -MAXLOG) {
      return 0.0;
    }
    return exp(ax);
  }

  fac = a + lanczos_g - 0.5;
  res = sqrt(fac / EXP1) / lanczos_sum_expg_scaled(a);

  if ((a < 200) && (x < 200)) {
    res *= exp(a - x) * pow(x / fac, a);
  }
  else {
    num = x - a - lanczos_g + 0.5;
    numfac = num / fac;
    res *= exp(a * (log1p(numfac) - numfac) + x * (0.5 - lanczos_g) / fac);
  }
  return res;
}

/* igam's power series to relative precision EPS (half double's epsilon, or
   SP_IGAM_EPS32 for a float32 result) */
static double _igam_helper_series(double a, double x, double EPS) {
  // Compute igam using DLMF 8.11.4. [igam1]
  static int MAXITER = 2000;

  int i;
  double ans, ax, c, r;

  ax = _igam_helper_fac(a, x);
  if (ax == 0.0) {
    return 0.0;
  }

  /* power series */
  r = a;
  c = 1.0;
  ans = 1.0;

  for (i = 0; i < MAXITER; i++) {
    r += 1.0;
    c *= x / r;
    ans += c;
    if (c <= EPS * ans) {
      break;
    }
  }
  return (ans * ax / a);
}

static double _igamc_helper_series(double a, double x, double EPS) {
  // Compute igamc using DLMF 8.7.3 [igam1]. This is related to the series in
  // _igam_helper_series but extra care is taken to avoid cancellation.

  int n;
  double fac = 1;
  double sum = 0;
  double term, logx;
 static double MAXITER = 2000;

  for (n = 1; n < MAXITER; n++) {
    fac *= -x / n;
    term = fac / (a + n);
    sum += term;
    if (fabs(term) <= EPS * fabs(sum)) {
        break;
    }
  }

  logx = log(x);
  term = -expm1(a * logx - lgamma(1+a));
  return term - exp(a * logx - lgamma(a)) * sum;
}

static double _igam_helper_asymptotic_series(double a, double x, int igam, double EPS) {
  // Compute igam/igamc using DLMF 8.12.3/8.12.4 [igam1]
  static const double d[25][25] =
    {{-3.3333333333333333e-1, 8.3333333333333333e-2, -1.4814814814814815e-2,
      1.1574074074074074e-3, 3.527336860670194e-4, -1.7875514403292181e-4,
      3.9192631785224378e-5, -2.1854485106799922e-6, -1.85406221071516e-6,
      8.296711340953086e-7, -1.7665952736826079e-7, 6.7078535434014986e-9,
      1.0261809784240308e-8, -4.3820360184533532e-9, 9.1476995822367902e-10,
      -2.551419399494625e-11, -5.8307721325504251e-11, 2.4361948020667416e-11,
      -5.0276692801141756e-12, 1.1004392031956135e-13, 3.3717632624009854e-13,
      -1.3923887224181621e-13, 2.8534893807047443e-14, -5.1391118342425726e-16,
      -1.9752288294349443e-15},
    {-1.8518518518518519e-3, -3.4722222222222222e-3, 2.6455026455026455e-3,
      -9.9022633744855967e-4, 2.0576131687242798e-4, -4.0187757201646091e-7,
      -1.8098550334489978e-5, 7.6491609160811101e-6, -1.6120900894563446e-6,
      4.6471278028074343e-9, 1.378633446915721e-7, -5.752545603517705e-8,
      1.1951628599778147e-8, -1.7543241719747648e-11, -1.0091543710600413e-9,
      4.1627929918425826e-10, -8.5639070264929806e-11, 6.0672151016047586e-14,
      7.1624989648114854e-12, -2.9331866437714371e-12, 5.9966963656836887e-13,
      -2.1671786527323314e-16, -4.9783399723692616e-14, 2.0291628823713425e-14,
      -4.13125571381061e-15},
    {4.1335978835978836e-3, -2.6813271604938272e-3, 7.7160493827160494e-4,
      2.0093878600823045e-6, -1.0736653226365161e-4, 5.2923448829120125e-5,
      -1.2760635188618728e-5, 3.4235787340961381e-8, 1.3721957309062933e-6,
      -6.298992138380055e-7, 1.4280614206064242e-7, -2.0477098421990866e-10,
      -1.4092529910867521e-8, 6.228974084922022e-9, -1.3670488396617113e-9,
      9.4283561590146782e-13, 1.2872252400089318e-10, -5.5645956134363321e-11,
      1.1975935546366981e-11, -4.1689782251838635e-15, -1.0940640427884594e-12,
      4.6622399463901357e-13, -9.905105763906906e-14, 1.8931876768373515e-17,
      8.8592218725911273e-15},
    {6.4943415637860082e-4, 2.2947209362139918e-4, -4.6918949439525571e-4,
      2.6772063206283885e-4, -7.5618016718839764e-5, -2.3965051138672967e-7,
      1.1082654115347302e-5, -5.6749528269915966e-6, 1.4230900732435884e-6,
      -2.7861080291528142e-11, -1.6958404091930277e-7, 8.0994649053880824e-8,
      -1.9111168485973654e-8, 2.3928620439808118e-12, 2.0620131815488798e-9,
      -9.4604966618551322e-10, 2.1541049775774908e-10, -1.388823336813903e-14,
      -2.1894761681963939e-11, 9.7909989511716851e-12, -2.1782191880180962e-12,
      6.2088195734079014e-17, 2.126978363279737e-13, -9.3446887915174333e-14,
      2.0453671226782849e-14},
    {-8.618882909167117e-4, 7.8403922172006663e-4, -2.9907248030319018e-4,
      -1.4638452578843418e-6, 6.6414982154651222e-5, -3.9683650471794347e-5,
      1.1375726970678419e-5, 2.5074972262375328e-10, -1.6954149536558306e-6,
      8.9075075322053097e-7, -2.2929348340008049e-7, 2.956794137544049e-11,
      2.8865829742708784e-8, -1.4189739437803219e-8, 3.4463580499464897e-9,
      -2.3024517174528067e-13, -3.9409233028046405e-10, 1.8602338968504502e-10,
      -4.356323005056618e-11, 1.2786001016296231e-15, 4.6792750266579195e-12,
      -2.1492464706134829e-12, 4.9088156148096522e-13, -6.3385914848915603e-18,
      -5.0453320690800944e-14},
    {-3.3679855336635815e-4, -6.9728137583658578e-5, 2.7727532449593921e-4,
      -1.9932570516188848e-4, 6.7977804779372078e-5, 1.419062920643967e-7,
      -1.3594048189768693e-5, 8.0184702563342015e-6, -2.2914811765080952e-6,
      -3.252473551298454e-10, 3.4652846491085265e-7, -1.8447187191171343e-7,
      4.8240967037894181e-8, -1.7989466721743515e-14, -6.3061945000135234e-9,
      3.1624176287745679e-9, -7.8409242536974293e-10, 5.1926791652540407e-15,
      9.3589442423067836e-11, -4.5134262161632782e-11, 1.0799129993116827e-11,
      -3.661886712685252e-17, -1.210902069055155e-12, 5.6807435849905643e-13,
      -1.3249659916340829e-13},
    {5.3130793646399222e-4, -5.9216643735369388e-4, 2.7087820967180448e-4,
      7.9023532326603279e-7, -8.1539693675619688e-5, 5.6116827531062497e-5,
      -1.8329116582843376e-5, -3.0796134506033048e-9, 3.4651553688036091e-6,
      -2.0291327396058604e-6, 5.7887928631490037e-7, 2.338630673826657e-13,
      -8.8286007463304835e-8, 4.7435958880408128e-8, -1.2545415020710382e-8,
      8.6496488580102925e-14, 1.6846058979264063e-9, -8.5754928235775947e-10,
      2.1598224929232125e-10, -7.6132305204761539e-16, -2.6639822008536144e-11,
      1.3065700536611057e-11, -3.1799163902367977e-12, 4.7109761213674315e-18,
      3.6902800842763467e-13},
    {3.4436760689237767e-4, 5.1717909082605922e-5, -3.3493161081142236e-4,
      2.812695154763237e-4, -1.0976582244684731e-4, -1.2741009095484485e-7,
      2.7744451511563644e-5, -1.8263488805711333e-5, 5.7876949497350524e-6,
      4.9387589339362704e-10, -1.0595367014026043e-6, 6.1667143761104075e-7,
      -1.7562973359060462e-7, -1.2974473287015439e-12, 2.695423606288966e-8,
      -1.4578352908731271e-8, 3.887645959386175e-9, -3.8810022510194121e-17,
      -5.3279941738772867e-10, 2.7437977643314845e-10, -6.9957960920705679e-11,
      2.5899863874868481e-17, 8.8566890996696381e-12, -4.403168815871311e-12,
      1.0865561947091654e-12},
    {-6.5262391859530942e-4, 8.3949872067208728e-4, -4.3829709854172101e-4,
      -6.969091458420552e-7, 1.6644846642067548e-4, -1.2783517679769219e-4,
      4.6299532636913043e-5, 4.5579098679227077e-9, -1.0595271125805195e-5,
      6.7833429048651666e-6, -2.1075476666258804e-6, -1.7213731432817145e-11,
      3.7735877416110979e-7, -2.1867506700122867e-7, 6.2202288040189269e-8,
      6.5977038267330006e-16, -9.5903864974256858e-9, 5.2132144922808078e-9,
      -1.3991589583935709e-9, 5.382058999060575e-16, 1.9484714275467745e-10,
      -1.0127287556389682e-10, 2.6077347197254926e-11, -5.0904186999932993e-18,
      -3.3721464474854592e-12},
    {-5.9676129019274625e-4, -7.2048954160200106e-5, 6.7823088376673284e-4,
      -6.4014752602627585e-4, 2.7750107634328704e-4, 1.8197008380465151e-7,
      -8.4795071170685032e-5, 6.105192082501531e-5, -2.1073920183404862e-5,
      -8.8585890141255994e-10, 4.5284535953805377e-6, -2.8427815022504408e-6,
      8.7082341778646412e-7, 3.6886101871706965e-12, -1.5344695190702061e-7,
      8.862466778790695e-8, -2.5184812301826817e-8, -1.0225912098215092e-14,
      3.8969470758154777e-9, -2.1267304792235635e-9, 5.7370135528051385e-10,
      -1.887749850169741e-19, -8.0931538694657866e-11, 4.2382723283449199e-11,
      -1.1002224534207726e-11},
    {1.3324454494800656e-3, -1.9144384985654775e-3, 1.1089369134596637e-3,
      9.932404122642299e-7, -5.0874501293093199e-4, 4.2735056665392884e-4,
      -1.6858853767910799e-4, -8.1301893922784998e-9, 4.5284402370562147e-5,
      -3.127053674781734e-5, 1.044986828530338e-5, 4.8435226265680926e-11,
      -2.1482565873456258e-6, 1.329369701097492e-6, -4.0295693092101029e-7,
      -1.7567877666323291e-13, 7.0145043163668257e-8, -4.040787734999483e-8,
      1.1474026743371963e-8, 3.9642746853563325e-18, -1.7804938269892714e-9,
      9.7480262548731646e-10, -2.6405338676507616e-10, 5.794875163403742e-18,
      3.7647749553543836e-11},
    {1.579727660730835e-3, 1.6251626278391582e-4, -2.0633421035543276e-3,
      2.1389686185689098e-3, -1.0108559391263003e-3, -3.9912705529919201e-7,
      3.6235025084764691e-4, -2.8143901463712154e-4, 1.0449513336495887e-4,
      2.1211418491830297e-9, -2.5779417251947842e-5, 1.7281818956040463e-5,
      -5.6413773872904282e-6, -1.1024320105776174e-11, 1.1223224418895175e-6,
      -6.8693396379526735e-7, 2.0653236975414887e-7, 4.6714772409838506e-14,
      -3.5609886164949055e-8, 2.0470855345905963e-8, -5.8091738633283358e-9,
      -1.332821287582869e-16, 9.0354604391335133e-10, -4.9598782517330834e-10,
      1.3481607129399749e-10},
    {-4.0725121195140166e-3, 6.4033628338080698e-3, -4.0410161081676618e-3,
      -2.183732802866233e-6, 2.1740441801254639e-3, -1.9700440518418892e-3,
      8.3595469747962458e-4, 1.9445447567109655e-8, -2.5779387120421696e-4,
      1.9009987368139304e-4, -6.7696499937438965e-5, -1.4440629666426572e-10,
      1.5712512518742269e-5, -1.0304008744776893e-5, 3.304517767401387e-6,
      7.9829760242325709e-13, -6.4097794149313004e-7, 3.8894624761300056e-7,
      -1.1618347644948869e-7, -2.816808630596451e-15, 1.9878012911297093e-8,
      -1.1407719956357511e-8, 3.2355857064185555e-9, 4.1759468293455945e-20,
      -5.0423112718105824e-10},
    {-5.9475779383993003e-3, -5.4016476789260452e-4, 8.7910413550767898e-3,
      -9.8576315587856125e-3, 5.0134695031021538e-3, 1.2807521786221875e-6,
      -2.0626019342754683e-3, 1.7109128573523058e-3, -6.7695312714133799e-4,
      -6.9011545676562133e-9, 1.8855128143995902e-4, -1.3395215663491969e-4,
      4.6263183033528039e-5, 4.0034230613321351e-11, -1.0255652921494033e-5,
      6.612086372797651e-6, -2.0913022027253008e-6, -2.0951775649603837e-13,
      3.9756029041993247e-7, -2.3956211978815887e-7, 7.1182883382145864e-8,
      8.925574873053455e-16, -1.2101547235064676e-8, 6.9350618248334386e-9,
      -1.9661464453856102e-9},
    {1.7402027787522711e-2, -2.9527880945699121e-2, 2.0045875571402799e-2,
      7.0289515966903407e-6, -1.2375421071343148e-2, 1.1976293444235254e-2,
      -5.4156038466518525e-3, -6.3290893396418616e-8, 1.8855118129005065e-3,
      -1.473473274825001e-3, 5.5515810097708387e-4, 5.2406834412550662e-10,
      -1.4357913535784836e-4, 9.9181293224943297e-5, -3.3460834749478311e-5,
      -3.5755837291098993e-12, 7.1560851960630076e-6, -4.5516802628155526e-6,
      1.4236576649271475e-6, 1.8803149082089664e-14, -2.6623403898929211e-7,
      1.5950642189595716e-7, -4.7187514673841102e-8, -6.5107872958755177e-17,
      7.9795091026746235e-9},
    {3.0249124160905891e-2, 2.4817436002649977e-3, -4.9939134373457022e-2,
      5.9915643009307869e-2, -3.2483207601623391e-2, -5.7212968652103441e-6,
      1.5085251778569354e-2, -1.3261324005088445e-2, 5.5515262632426148e-3,
      3.0263182257030016e-8, -1.7229548406756723e-3, 1.2893570099929637e-3,
      -4.6845138348319876e-4, -1.830259937893045e-10, 1.1449739014822654e-4,
      -7.7378565221244477e-5, 2.5625836246985201e-5, 1.0766165333192814e-12,
      -5.3246809282422621e-6, 3.349634863064464e-6, -1.0381253128684018e-6,
      -5.608909920621128e-15, 1.9150821930676591e-7, -1.1418365800203486e-7,
      3.3654425209171788e-8},
    {-9.9051020880159045e-2, 1.7954011706123486e-1, -1.2989606383463778e-1,
      -3.1478872752284357e-5, 9.0510635276848131e-2, -9.2828824411184397e-2,
      4.4412112839877808e-2, 2.7779236316835888e-7, -1.7229543805449697e-2,
      1.4182925050891573e-2, -5.6214161633747336e-3, -2.39598509186381e-9,
      1.6029634366079908e-3, -1.1606784674435773e-3, 4.1001337768153873e-4,
      1.8365800754090661e-11, -9.5844256563655903e-5, 6.3643062337764708e-5,
      -2.076250624489065e-5, -1.1806020912804483e-13, 4.2131808239120649e-6,
      -2.6262241337012467e-6, 8.0770620494930662e-7, 6.0125912123632725e-16,
      -1.4729737374018841e-7},
    {-1.9994542198219728e-1, -1.5056113040026424e-2, 3.6470239469348489e-1,
      -4.6435192311733545e-1, 2.6640934719197893e-1, 3.4038266027147191e-5,
      -1.3784338709329624e-1, 1.276467178337056e-1, -5.6213828755200985e-2,
      -1.753150885483011e-7, 1.9235592956768113e-2, -1.5088821281095315e-2,
      5.7401854451350123e-3, 1.0622382710310225e-9, -1.5335082692563998e-3,
      1.0819320643228214e-3, -3.7372510193945659e-4, -6.6170909729031985e-12,
      8.4263617380909628e-5, -5.5150706827483479e-5, 1.7769536448348069e-5,
      3.8827923210205533e-14, -3.53513697488768e-6, 2.1865832130045269e-6,
      -6.6812849447625594e-7},
    {7.2438608504029431e-1, -1.3918010932653375, 1.0654143352413968,
      1.876173868950258e-4, -8.2705501176152696e-1, 8.9352433347828414e-1,
      -4.4971003995291339e-1, -1.6107401567546652e-6, 1.9235590165271091e-1,
      -1.6597702160042609e-1, 6.8882222681814333e-2, 1.3910091724608687e-8,
      -2.146911561508663e-2, 1.6228980898865892e-2, -5.9796016172584256e-3,
      -1.1287469112826745e-10, 1.5167451119784857e-3, -1.0478634293553899e-3,
      3.5539072889126421e-4, 8.1704322111801517e-13, -7.7773013442452395e-5,
      5.0291413897007722e-5, -1.6035083867000518e-5, 1.2469354315487605e-14,
      3.1369106244517615e-6},
    {1.6668949727276811, 1.165462765994632e-1, -3.3288393225018906,
      4.4692325482864037, -2.6977693045875807, -2.600667859891061e-4,
      1.5389017615694539, -1.4937962361134612, 6.8881964633233148e-1,
      1.3077482004552385e-6, -2.5762963325596288e-1, 2.1097676102125449e-1,
      -8.3714408359219882e-2, -7.7920428881354753e-9, 2.4267923064833599e-2,
      -1.7813678334552311e-2, 6.3970330388900056e-3, 4.9430807090480523e-11,
      -1.5554602758465635e-3, 1.0561196919903214e-3, -3.5277184460472902e-4,
      9.3002334645022459e-14, 7.5285855026557172e-5, -4.8186515569156351e-5,
      1.5227271505597605e-5},
    {-6.6188298861372935, 1.3397985455142589e+1, -1.0789350606845146e+1,
      -1.4352254537875018e-3, 9.2333694596189809, -1.0456552819547769e+1,
      5.5105526029033471, 1.2024439690716742e-5, -2.5762961164755816,
      2.3207442745387179, -1.0045728797216284, -1.0207833290021914e-7,
      3.3975092171169466e-1, -2.6720517450757468e-1, 1.0235252851562706e-1,
      8.4329730484871625e-10, -2.7998284958442595e-2, 2.0066274144976813e-2,
      -7.0554368915086242e-3, 1.9402238183698188e-12, 1.6562888105449611e-3,
      -1.1082898580743683e-3, 3.654545161310169e-4, -5.1290032026971794e-11,
      -7.6340103696869031e-5},
    {-1.7112706061976095e+1, -1.1208044642899116, 3.7131966511885444e+1,
      -5.2298271025348962e+1, 3.3058589696624618e+1, 2.4791298976200222e-3,
      -2.061089403411526e+1, 2.088672775145582e+1, -1.0045703956517752e+1,
      -1.2238783449063012e-5, 4.0770134274221141, -3.473667358470195,
      1.4329352617312006, 7.1359914411879712e-8, -4.4797257159115612e-1,
      3.4112666080644461e-1, -1.2699786326594923e-1, -2.8953677269081528e-10,
      3.3125776278259863e-2, -2.3274087021036101e-2, 8.0399993503648882e-3,
      -1.177805216235265e-9, -1.8321624891071668e-3, 1.2108282933588665e-3,
      -3.9479941246822517e-4},
    {7.389033153567425e+1, -1.5680141270402273e+2, 1.322177542759164e+2,
      1.3692876877324546e-2, -1.2366496885920151e+2, 1.4620689391062729e+2,
      -8.0365587724865346e+1, -1.1259851148881298e-4, 4.0770132196179938e+1,
      -3.8210340013273034e+1, 1.719522294277362e+1, 9.3519707955168356e-7,
      -6.2716159907747034, 5.1168999071852637, -2.0319658112299095,
      -4.9507215582761543e-9, 5.9626397294332597e-1, -4.4220765337238094e-1,
      1.6079998700166273e-1, -2.4733786203223402e-8, -4.0307574759979762e-2,
      2.7849050747097869e-2, -9.4751858992054221e-3, 6.419922235909132e-6,
      2.1250180774699461e-3},
    {2.1216837098382522e+2, 1.3107863022633868e+1, -4.9698285932871748e+2,
      7.3121595266969204e+2, -4.8213821720890847e+2, -2.8817248692894889e-2,
      3.2616720302947102e+2, -3.4389340280087117e+2, 1.7195193870816232e+2,
      1.4038077378096158e-4, -7.52594195897599e+1, 6.651969984520934e+1,
      -2.8447519748152462e+1, -7.613702615875391e-7, 9.5402237105304373,
      -7.5175301113311376, 2.8943997568871961, -4.6612194999538201e-7,
      -8.0615149598794088e-1, 5.8483006570631029e-1, -2.0845408972964956e-1,
      1.4765818959305817e-4, 5.1000433863753019e-2, -3.3066252141883665e-2,
      1.5109265210467774e-2},
    {-9.8959643098322368e+2, 2.1925555360905233e+3, -1.9283586782723356e+3,
      -1.5925738122215253e-1, 1.9569985945919857e+3, -2.4072514765081556e+3,
      1.3756149959336496e+3, 1.2920735237496668e-3, -7.525941715948055e+2,
      7.3171668742208716e+2, -3.4137023466220065e+2, -9.9857390260608043e-6,
      1.3356313181291573e+2, -1.1276295161252794e+2, 4.6310396098204458e+1,
      -7.9237387133614756e-6, -1.4510726927018646e+1, 1.1111771248100563e+1,
      -4.1690817945270892, 3.1008219800117808e-3, 1.1220095449981468,
      -7.6052379926149916e-1, 3.6262236505085254e-1, 2.216867741940747e-1,
      4.8683443692930507e-1}};

  int k, n, sgn;
  int maxpow = 0;
  double lambda = x / a;
  double sigma = (x - a) / a;
  double eta, res, ck, ckterm, term, absterm;
  double absoldterm = INFINITY;
  double etapow[25] = {1};
  double sum = 0;
  double afac = 1;

  if (igam) {
    sgn = -1;
  }
  else {
    sgn = 1;
  }

  if (lambda > 1) {
    eta = sqrt(-2 * (log1p(sigma) - sigma));
  }
  else if (lambda < 1) {
    eta = -sqrt(-2 * (log1p(sigma) - sigma));
  }
  else {
    eta = 0;
  }
  res = 0.5 * erfc(sgn * eta * sqrt(a / 2));

  for (k = 0; k < 25; k++) {
    ck = d[k][0];
    for (n = 1; n < 25; n++) {
      if (n > maxpow) {
        etapow[n] = eta * etapow[n-1];
        maxpow += 1;
      }
      ckterm = d[k][n]*etapow[n];
      ck += ckterm;
      if (fabs(ckterm) < EPS * fabs(ck)) {
        break;
      }
    }
    term = ck * afac;
    absterm = fabs(term);
    if (absterm > absoldterm) {
      break;
    }
    sum += term;
    if (absterm < EPS * fabs(sum)) {
      break;
    }
    absoldterm = absterm;
    afac /= a;
  }
  res += sgn * exp(-0.5 * a * eta * eta) * sum / sqrt(2 * M_PI * a);

  return res;
}

static double _igamc_helper_continued_fraction(double a, double x, double EPS) {
  // Compute igamc using DLMF 8.9.2. [igam1]
  int i;
  double ans, ax, c, yc, r, t, y, z;
  double pk, pkm1, pkm2, qk, qkm1, qkm2;
  int MAXITER = 2000;
 static double BIG = 4.503599627370496e15;
 static double BIGINV = 2.22044604925031308085e-16;

  ax = _igam_helper_fac(a, x);
  if (ax == 0.0) {
    return 0.0;
  }

  /* continued fraction */
  y = 1.0 - a;
  z = x + y + 1.0;
  c = 0.0;
  pkm2 = 1.0;
  qkm2 = x;
  pkm1 = x + 1.0;
  qkm1 = z * x;
  ans = pkm1 / qkm1;

  for (i = 0; i < MAXITER; i++) {
    c += 1.0;
    y += 1.0;
    z += 2.0;
    yc = y * c;
    /* fused, as torch's build contracts it: the recurrence cancels, and over tens
       of steps the unfused roundings cost tens of ulps */
    pk = fma(pkm1, z, -(pkm2 * yc));
    qk = fma(qkm1, z, -(qkm2 * yc));
    if (qk != 0) {
      r = pk / qk;
      /* |ans - r| <= EPS |r|, the relative change without a second division */
      t = fabs(ans - r) <= EPS * fabs(r) ? 0.0 : 1.0;
      ans = r;
    }
    else {
      t = 1.0;
    }
    pkm2 = pkm1;
    pkm1 = pk;
    qkm2 = qkm1;
    qkm1 = qk;
    if (fabs(pk) > BIG) {
      pkm2 *= BIGINV;
      pkm1 *= BIGINV;
      qkm2 *= BIGINV;
      qkm1 *= BIGINV;
    }
    if (t <= 0.0) {
      break;
    }
  }
  return ans * ax;
}

static double sp_igammac_e(double a, double x, double EPS) {
  /* the calculation of the regularized upper incomplete gamma function
   * is done differently based on the values of a and x:
   * - if x and/or a is at the boundary of defined region, then assign the
   *   result at the boundary
   * - if a is large and a ~ x, then using Uniform Asymptotic Expansions for
   *   Large Parameter (see DLMF 8.12.4 [igam1])
   * - if x > 1.1 and x < a, using the subtraction from the regularized lower
   *   incomplete gamma
   * - otherwise, calculate the series from [igam2] eq (5)
   */
  double absxma_a;

 static double SMALL = 20.0;
 static double LARGE = 200.0;
 static double SMALLRATIO = 0.3;
 static double LARGERATIO = 4.5;

  // note that in SciPy, a and x are non-negative, with exclusive 0s (i.e.,
  // at most 1 of them can be 0), where igammac(0, x) = 0.0 iff x > 0.
  if ((x < 0) || (a < 0)) {
    // out of defined-region of the function
    return NAN;
  }
  else if (a == 0) {
    if (x > 0) {
      return 0.0;
    }
    else {
      return NAN;
    }
  }
  else if (x == 0) {
    return 1.0;
  }
  else if (isinf(a)) {
    if (isinf(x)) {
      return NAN;
    }
    return 1.0;
  }
  else if (isinf(x)) {
    return 0.0;
  }

  absxma_a = fabs(x - a) / a;
  if ((a > SMALL) && (a < LARGE) && (absxma_a < SMALLRATIO)) {
     return _igam_helper_asymptotic_series(a, x, 0, EPS);
  }
  else if ((a > LARGE) && (absxma_a < LARGERATIO / sqrt(a))) {
     return _igam_helper_asymptotic_series(a, x, 0, EPS);
  }

  if (x > 1.1) {
    if (x < a) {
      return 1.0 - _igam_helper_series(a, x, EPS);
    }
    else {
      return _igamc_helper_continued_fraction(a, x, EPS);
    }
  }
  else if (x <= 0.5) {
    if (-0.4 / log(x) < a) {
      return 1.0 - _igam_helper_series(a, x, EPS);
    }
    else {
      return _igamc_helper_series(a, x, EPS);
    }
  }
  else {
    if (x * 1.1 < a) {
      return 1.0 - _igam_helper_series(a, x, EPS);
    }
    else {
      return _igamc_helper_series(a, x, EPS);
    }
  }
}

static double sp_igamma_e(double a, double x, double EPS) {
  /* the calculation of the regularized lower incomplete gamma function
   * is done differently based on the values of a and x:
   * - if x and/or a is at the boundary of defined region, then assign the
   *   result at the boundary
   * - if a is large and a ~ x, then using Uniform Asymptotic Expansions for
   *   Large Parameter (see DLMF 8.12.3 [igam1])
   * - if x > 1 and x > a, using the subtraction from the regularized upper
   *   incomplete gamma
   * - otherwise, calculate the series from [igam2] eq (4)
   */
  double absxma_a;
 static double SMALL = 20.0;
 static double LARGE = 200.0;
 static double SMALLRATIO = 0.3;
 static double LARGERATIO = 4.5;

  // boundary values following SciPy
  // note that in SciPy, a and x are non-negative, with exclusive 0s (i.e.,
  // at most 1 of them can be 0), where igamma(0, x) = 1.0 iff x > 0.
  if ((x < 0) || (a < 0)) {
    // out of defined-region of the function
    return NAN;
  }
  else if (a == 0) {
    if (x > 0) {
      return 1.0;
    }
    else {
      return NAN;
    }
  }
  else if (x == 0) {
    return 0.0; // zero integration limit
  }
  else if (isinf(a)) {
    if (isinf(x)) {
      return NAN;
    }
    return 0.0;
  }
  else if (isinf(x)) {
    return 1.0;
  }

  /* Asymptotic regime where a ~ x. See [igam2] */
  absxma_a = fabs(x - a) / a;
  if ((a > SMALL) && (a < LARGE) && (absxma_a < SMALLRATIO)) {
    return _igam_helper_asymptotic_series(a, x, 1, EPS);
  }
  else if ((a > LARGE) && (absxma_a < LARGERATIO / sqrt(a))) {
    return _igam_helper_asymptotic_series(a, x, 1, EPS);
  }

  if ((x > 1.0) && (x > a)) {
    return 1.0 - sp_igammac_e(a, x, EPS);
  }

  return _igam_helper_series(a, x, EPS);
}

/* igamma and igammac to double precision; float32 results stop the series at
   2^-36 relative (their terms past it cannot move a float32) */
#define SP_IGAM_EPS64 1.11022302462515654042E-16
#define SP_IGAM_EPS32 1.4551915228366852e-11
static double sp_igamma(double a, double x) { return sp_igamma_e(a, x, SP_IGAM_EPS64); }
static double sp_igammac(double a, double x) { return sp_igammac_e(a, x, SP_IGAM_EPS64); }
/* the scalar form for the block loops of special_igam_impl.h (special_isa_*.c) */
double em_sp_igam_ref(int upper, double a, double x, double eps) {
    return upper ? sp_igammac_e(a, x, eps) : sp_igamma_e(a, x, eps);
}

static double chbevl(const double x, const double array[], size_t len) {
  double b0, b1, b2 = (double)(0.0);

  b0 = array[0];
  b1 = (double)(0.0);

  for (size_t i = 1; i < len; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + array[i];
  }

  return ((double)(0.5) * (b0 - b2));
}

static const double * chebyshev_coefficients_i0e_A() {
  /* Chebyshev coefficients for exp(-x) I0(x)
   * in the interval [0,8].
   *
   * lim(x->0){ exp(-x) I0(x) } = 1.
   */
  return SPB_I0_A;
}

static const double * chebyshev_coefficients_i0e_B() {
  /* Chebyshev coefficients for exp(-x) sqrt(x) I0(x)
   * in the inverted interval [8,infinity].
   *
   * lim(x->inf){ exp(-x) sqrt(x) I0(x) } = 1/sqrt(2pi).
   */
  return SPB_I0_B;
}

static const double *chebyshev_coefficients_i1e_A() {
  /* Chebyshev coefficients for exp(-x) I1(x)
   * in the interval [0,8].
   *
   * lim(x->0){ exp(-x) I1(x) / x } = 1/2.
   */
  return SPB_I1_A;
}

static const double *chebyshev_coefficients_i1e_B() {
  /* Chebyshev coefficients for exp(-x) sqrt(x) I1(x)
   * in the inverted interval [8,infinity].
   *
   * lim(x->inf){ exp(-x) sqrt(x) I1(x) } = 1/sqrt(2pi).
   */
  return SPB_I1_B;
}

static double sp_i0(double _x) {
  double x = fabs(_x);

  if (x <= ((double)(8.0))) {
    const double *A = chebyshev_coefficients_i0e_A(); size_t len = 30;
    double y = (x / ((double)(2.0))) - ((double)(2.0));
    return (double)(exp(x) * chbevl(y, A, len));
  }
  const double *B = chebyshev_coefficients_i0e_B(); size_t len = 25;
  return exp(x) * chbevl(((double)(32.0)) / x - ((double)(2.0)), B, len) / sqrt(x);
}

static double sp_i1(double _x) {
  double x = fabs(_x);

  if (x <= ((double)(8.0))) {
    const double *A = chebyshev_coefficients_i1e_A(); size_t len = 29;
    double y = (x / ((double)(2.0))) - ((double)(2.0));
    const double out = exp(x) * x * chbevl(y, A, len);
    return (_x < ((double)(0.0))) ? -out : out;
  }
  const double *B = chebyshev_coefficients_i1e_B(); size_t len = 25;
  const double out = (exp(x) * chbevl(((double)(32.0)) / x - ((double)(2.0)), B, len)) / sqrt(x);
  return (_x < ((double)(0.0))) ? -out : out;
}

static double sp_i1e(double _x) {
  double x = fabs(_x);

  if (x <= ((double)(8.0))) {
    const double *A = chebyshev_coefficients_i1e_A(); size_t len = 29;
    double y = (x / ((double)(2.0))) - ((double)(2.0));
    const double out = chbevl(y, A, len) * x;
    return (_x < ((double)(0.0))) ? -out : out;
  }
  const double *B = chebyshev_coefficients_i1e_B(); size_t len = 25;
  const double out = chbevl(((double)(32.0)) / x - ((double)(2.0)), B, len) / sqrt(x);
  return (_x < ((double)(0.0))) ? -out : out;
}

 static double erfcx_y100(double y100)
{
  switch ((int)(y100)) {
case 0: {
double t = 2*y100 - 1;
return 0.70878032454106438663e-3 + (0.71234091047026302958e-3 + (0.35779077297597742384e-5 + (0.17403143962587937815e-7 + (0.81710660047307788845e-10 + (0.36885022360434957634e-12 + 0.15917038551111111111e-14 * t) * t) * t) * t) * t) * t;
}
case 1: {
double t = 2*y100 - 3;
return 0.21479143208285144230e-2 + (0.72686402367379996033e-3 + (0.36843175430938995552e-5 + (0.18071841272149201685e-7 + (0.85496449296040325555e-10 + (0.38852037518534291510e-12 + 0.16868473576888888889e-14 * t) * t) * t) * t) * t) * t;
}
case 2: {
double t = 2*y100 - 5;
return 0.36165255935630175090e-2 + (0.74182092323555510862e-3 + (0.37948319957528242260e-5 + (0.18771627021793087350e-7 + (0.89484715122415089123e-10 + (0.40935858517772440862e-12 + 0.17872061464888888889e-14 * t) * t) * t) * t) * t) * t;
}
case 3: {
double t = 2*y100 - 7;
return 0.51154983860031979264e-2 + (0.75722840734791660540e-3 + (0.39096425726735703941e-5 + (0.19504168704300468210e-7 + (0.93687503063178993915e-10 + (0.43143925959079664747e-12 + 0.18939926435555555556e-14 * t) * t) * t) * t) * t) * t;
}
case 4: {
double t = 2*y100 - 9;
return 0.66457513172673049824e-2 + (0.77310406054447454920e-3 + (0.40289510589399439385e-5 + (0.20271233238288381092e-7 + (0.98117631321709100264e-10 + (0.45484207406017752971e-12 + 0.20076352213333333333e-14 * t) * t) * t) * t) * t) * t;
}
case 5: {
double t = 2*y100 - 11;
return 0.82082389970241207883e-2 + (0.78946629611881710721e-3 + (0.41529701552622656574e-5 + (0.21074693344544655714e-7 + (0.10278874108587317989e-9 + (0.47965201390613339638e-12 + 0.21285907413333333333e-14 * t) * t) * t) * t) * t) * t;
}
case 6: {
double t = 2*y100 - 13;
return 0.98039537275352193165e-2 + (0.80633440108342840956e-3 + (0.42819241329736982942e-5 + (0.21916534346907168612e-7 + (0.10771535136565470914e-9 + (0.50595972623692822410e-12 + 0.22573462684444444444e-14 * t) * t) * t) * t) * t) * t;
}
case 7: {
double t = 2*y100 - 15;
return 0.11433927298290302370e-1 + (0.82372858383196561209e-3 + (0.44160495311765438816e-5 + (0.22798861426211986056e-7 + (0.11291291745879239736e-9 + (0.53386189365816880454e-12 + 0.23944209546666666667e-14 * t) * t) * t) * t) * t) * t;
}
case 8: {
double t = 2*y100 - 17;
return 0.13099232878814653979e-1 + (0.84167002467906968214e-3 + (0.45555958988457506002e-5 + (0.23723907357214175198e-7 + (0.11839789326602695603e-9 + (0.56346163067550237877e-12 + 0.25403679644444444444e-14 * t) * t) * t) * t) * t) * t;
}
case 9: {
double t = 2*y100 - 19;
return 0.14800987015587535621e-1 + (0.86018092946345943214e-3 + (0.47008265848816866105e-5 + (0.24694040760197315333e-7 + (0.12418779768752299093e-9 + (0.59486890370320261949e-12 + 0.26957764568888888889e-14 * t) * t) * t) * t) * t) * t;
}
case 10: {
double t = 2*y100 - 21;
return 0.16540351739394069380e-1 + (0.87928458641241463952e-3 + (0.48520195793001753903e-5 + (0.25711774900881709176e-7 + (0.13030128534230822419e-9 + (0.62820097586874779402e-12 + 0.28612737351111111111e-14 * t) * t) * t) * t) * t) * t;
}
case 11: {
double t = 2*y100 - 23;
return 0.18318536789842392647e-1 + (0.89900542647891721692e-3 + (0.50094684089553365810e-5 + (0.26779777074218070482e-7 + (0.13675822186304615566e-9 + (0.66358287745352705725e-12 + 0.30375273884444444444e-14 * t) * t) * t) * t) * t) * t;
}
case 12: {
double t = 2*y100 - 25;
return 0.20136801964214276775e-1 + (0.91936908737673676012e-3 + (0.51734830914104276820e-5 + (0.27900878609710432673e-7 + (0.14357976402809042257e-9 + (0.70114790311043728387e-12 + 0.32252476000000000000e-14 * t) * t) * t) * t) * t) * t;
}
case 13: {
double t = 2*y100 - 27;
return 0.21996459598282740954e-1 + (0.94040248155366777784e-3 + (0.53443911508041164739e-5 + (0.29078085538049374673e-7 + (0.15078844500329731137e-9 + (0.74103813647499204269e-12 + 0.34251892320000000000e-14 * t) * t) * t) * t) * t) * t;
}
case 14: {
double t = 2*y100 - 29;
return 0.23898877187226319502e-1 + (0.96213386835900177540e-3 + (0.55225386998049012752e-5 + (0.30314589961047687059e-7 + (0.15840826497296335264e-9 + (0.78340500472414454395e-12 + 0.36381553564444444445e-14 * t) * t) * t) * t) * t) * t;
}
case 15: {
double t = 2*y100 - 31;
return 0.25845480155298518485e-1 + (0.98459293067820123389e-3 + (0.57082915920051843672e-5 + (0.31613782169164830118e-7 + (0.16646478745529630813e-9 + (0.82840985928785407942e-12 + 0.38649975768888888890e-14 * t) * t) * t) * t) * t) * t;
}
case 16: {
double t = 2*y100 - 33;
return 0.27837754783474696598e-1 + (0.10078108563256892757e-2 + (0.59020366493792212221e-5 + (0.32979263553246520417e-7 + (0.17498524159268458073e-9 + (0.87622459124842525110e-12 + 0.41066206488888888890e-14 * t) * t) * t) * t) * t) * t;
}
case 17: {
double t = 2*y100 - 35;
return 0.29877251304899307550e-1 + (0.10318204245057349310e-2 + (0.61041829697162055093e-5 + (0.34414860359542720579e-7 + (0.18399863072934089607e-9 + (0.92703227366365046533e-12 + 0.43639844053333333334e-14 * t) * t) * t) * t) * t) * t;
}
case 18: {
double t = 2*y100 - 37;
return 0.31965587178596443475e-1 + (0.10566560976716574401e-2 + (0.63151633192414586770e-5 + (0.35924638339521924242e-7 + (0.19353584758781174038e-9 + (0.98102783859889264382e-12 + 0.46381060817777777779e-14 * t) * t) * t) * t) * t) * t;
}
case 19: {
double t = 2*y100 - 39;
return 0.34104450552588334840e-1 + (0.10823541191350532574e-2 + (0.65354356159553934436e-5 + (0.37512918348533521149e-7 + (0.20362979635817883229e-9 + (0.10384187833037282363e-11 + 0.49300625262222222221e-14 * t) * t) * t) * t) * t) * t;
}
case 20: {
double t = 2*y100 - 41;
return 0.36295603928292425716e-1 + (0.11089526167995268200e-2 + (0.67654845095518363577e-5 + (0.39184292949913591646e-7 + (0.21431552202133775150e-9 + (0.10994259106646731797e-11 + 0.52409949102222222221e-14 * t) * t) * t) * t) * t) * t;
}
case 21: {
double t = 2*y100 - 43;
return 0.38540888038840509795e-1 + (0.11364917134175420009e-2 + (0.70058230641246312003e-5 + (0.40943644083718586939e-7 + (0.22563034723692881631e-9 + (0.11642841011361992885e-11 + 0.55721092871111111110e-14 * t) * t) * t) * t) * t) * t;
}
case 22: {
double t = 2*y100 - 45;
return 0.40842225954785960651e-1 + (0.11650136437945673891e-2 + (0.72569945502343006619e-5 + (0.42796161861855042273e-7 + (0.23761401711005024162e-9 + (0.12332431172381557035e-11 + 0.59246802364444444445e-14 * t) * t) * t) * t) * t) * t;
}
case 23: {
double t = 2*y100 - 47;
return 0.43201627431540222422e-1 + (0.11945628793917272199e-2 + (0.75195743532849206263e-5 + (0.44747364553960993492e-7 + (0.25030885216472953674e-9 + (0.13065684400300476484e-11 + 0.63000532853333333334e-14 * t) * t) * t) * t) * t) * t;
}
case 24: {
double t = 2*y100 - 49;
return 0.45621193513810471438e-1 + (0.12251862608067529503e-2 + (0.77941720055551920319e-5 + (0.46803119830954460212e-7 + (0.26375990983978426273e-9 + (0.13845421370977119765e-11 + 0.66996477404444444445e-14 * t) * t) * t) * t) * t) * t;
}
case 25: {
double t = 2*y100 - 51;
return 0.48103121413299865517e-1 + (0.12569331386432195113e-2 + (0.80814333496367673980e-5 + (0.48969667335682018324e-7 + (0.27801515481905748484e-9 + (0.14674637611609884208e-11 + 0.71249589351111111110e-14 * t) * t) * t) * t) * t) * t;
}
case 26: {
double t = 2*y100 - 53;
return 0.50649709676983338501e-1 + (0.12898555233099055810e-2 + (0.83820428414568799654e-5 + (0.51253642652551838659e-7 + (0.29312563849675507232e-9 + (0.15556512782814827846e-11 + 0.75775607822222222221e-14 * t) * t) * t) * t) * t) * t;
}
case 27: {
double t = 2*y100 - 55;
return 0.53263363664388864181e-1 + (0.13240082443256975769e-2 + (0.86967260015007658418e-5 + (0.53662102750396795566e-7 + (0.30914568786634796807e-9 + (0.16494420240828493176e-11 + 0.80591079644444444445e-14 * t) * t) * t) * t) * t) * t;
}
case 28: {
double t = 2*y100 - 57;
return 0.55946601353500013794e-1 + (0.13594491197408190706e-2 + (0.90262520233016380987e-5 + (0.56202552975056695376e-7 + (0.32613310410503135996e-9 + (0.17491936862246367398e-11 + 0.85713381688888888890e-14 * t) * t) * t) * t) * t) * t;
}
case 29: {
double t = 2*y100 - 59;
return 0.58702059496154081813e-1 + (0.13962391363223647892e-2 + (0.93714365487312784270e-5 + (0.58882975670265286526e-7 + (0.34414937110591753387e-9 + (0.18552853109751857859e-11 + 0.91160736711111111110e-14 * t) * t) * t) * t) * t) * t;
}
case 30: {
double t = 2*y100 - 61;
return 0.61532500145144778048e-1 + (0.14344426411912015247e-2 + (0.97331446201016809696e-5 + (0.61711860507347175097e-7 + (0.36325987418295300221e-9 + (0.19681183310134518232e-11 + 0.96952238400000000000e-14 * t) * t) * t) * t) * t) * t;
}
case 31: {
double t = 2*y100 - 63;
return 0.64440817576653297993e-1 + (0.14741275456383131151e-2 + (0.10112293819576437838e-4 + (0.64698236605933246196e-7 + (0.38353412915303665586e-9 + (0.20881176114385120186e-11 + 0.10310784480000000000e-13 * t) * t) * t) * t) * t) * t;
}
case 32: {
double t = 2*y100 - 65;
return 0.67430045633130393282e-1 + (0.15153655418916540370e-2 + (0.10509857606888328667e-4 + (0.67851706529363332855e-7 + (0.40504602194811140006e-9 + (0.22157325110542534469e-11 + 0.10964842115555555556e-13 * t) * t) * t) * t) * t) * t;
}
case 33: {
double t = 2*y100 - 67;
return 0.70503365513338850709e-1 + (0.15582323336495709827e-2 + (0.10926868866865231089e-4 + (0.71182482239613507542e-7 + (0.42787405890153386710e-9 + (0.23514379522274416437e-11 + 0.11659571751111111111e-13 * t) * t) * t) * t) * t) * t;
}
case 34: {
double t = 2*y100 - 69;
return 0.73664114037944596353e-1 + (0.16028078812438820413e-2 + (0.11364423678778207991e-4 + (0.74701423097423182009e-7 + (0.45210162777476488324e-9 + (0.24957355004088569134e-11 + 0.12397238257777777778e-13 * t) * t) * t) * t) * t) * t;
}
case 35: {
double t = 2*y100 - 71;
return 0.76915792420819562379e-1 + (0.16491766623447889354e-2 + (0.11823685320041302169e-4 + (0.78420075993781544386e-7 + (0.47781726956916478925e-9 + (0.26491544403815724749e-11 + 0.13180196462222222222e-13 * t) * t) * t) * t) * t) * t;
}
case 36: {
double t = 2*y100 - 73;
return 0.80262075578094612819e-1 + (0.16974279491709504117e-2 + (0.12305888517309891674e-4 + (0.82350717698979042290e-7 + (0.50511496109857113929e-9 + (0.28122528497626897696e-11 + 0.14010889635555555556e-13 * t) * t) * t) * t) * t) * t;
}
case 37: {
double t = 2*y100 - 75;
return 0.83706822008980357446e-1 + (0.17476561032212656962e-2 + (0.12812343958540763368e-4 + (0.86506399515036435592e-7 + (0.53409440823869467453e-9 + (0.29856186620887555043e-11 + 0.14891851591111111111e-13 * t) * t) * t) * t) * t) * t;
}
case 38: {
double t = 2*y100 - 77;
return 0.87254084284461718231e-1 + (0.17999608886001962327e-2 + (0.13344443080089492218e-4 + (0.90900994316429008631e-7 + (0.56486134972616465316e-9 + (0.31698707080033956934e-11 + 0.15825697795555555556e-13 * t) * t) * t) * t) * t) * t;
}
case 39: {
double t = 2*y100 - 79;
return 0.90908120182172748487e-1 + (0.18544478050657699758e-2 + (0.13903663143426120077e-4 + (0.95549246062549906177e-7 + (0.59752787125242054315e-9 + (0.33656597366099099413e-11 + 0.16815130613333333333e-13 * t) * t) * t) * t) * t) * t;
}
case 40: {
double t = 2*y100 - 81;
return 0.94673404508075481121e-1 + (0.19112284419887303347e-2 + (0.14491572616545004930e-4 + (0.10046682186333613697e-6 + (0.63221272959791000515e-9 + (0.35736693975589130818e-11 + 0.17862931591111111111e-13 * t) * t) * t) * t) * t) * t;
}
case 41: {
double t = 2*y100 - 83;
return 0.98554641648004456555e-1 + (0.19704208544725622126e-2 + (0.15109836875625443935e-4 + (0.10567036667675984067e-6 + (0.66904168640019354565e-9 + (0.37946171850824333014e-11 + 0.18971959040000000000e-13 * t) * t) * t) * t) * t) * t;
}
case 42: {
double t = 2*y100 - 85;
return 0.10255677889470089531e0 + (0.20321499629472857418e-2 + (0.15760224242962179564e-4 + (0.11117756071353507391e-6 + (0.70814785110097658502e-9 + (0.40292553276632563925e-11 + 0.20145143075555555556e-13 * t) * t) * t) * t) * t) * t;
}
case 43: {
double t = 2*y100 - 87;
return 0.10668502059865093318e0 + (0.20965479776148731610e-2 + (0.16444612377624983565e-4 + (0.11700717962026152749e-6 + (0.74967203250938418991e-9 + (0.42783716186085922176e-11 + 0.21385479360000000000e-13 * t) * t) * t) * t) * t) * t;
}
case 44: {
double t = 2*y100 - 89;
return 0.11094484319386444474e0 + (0.21637548491908170841e-2 + (0.17164995035719657111e-4 + (0.12317915750735938089e-6 + (0.79376309831499633734e-9 + (0.45427901763106353914e-11 + 0.22696025653333333333e-13 * t) * t) * t) * t) * t) * t;
}
case 45: {
double t = 2*y100 - 91;
return 0.11534201115268804714e0 + (0.22339187474546420375e-2 + (0.17923489217504226813e-4 + (0.12971465288245997681e-6 + (0.84057834180389073587e-9 + (0.48233721206418027227e-11 + 0.24079890062222222222e-13 * t) * t) * t) * t) * t) * t;
}
case 46: {
double t = 2*y100 - 93;
return 0.11988259392684094740e0 + (0.23071965691918689601e-2 + (0.18722342718958935446e-4 + (0.13663611754337957520e-6 + (0.89028385488493287005e-9 + (0.51210161569225846701e-11 + 0.25540227111111111111e-13 * t) * t) * t) * t) * t) * t;
}
case 47: {
double t = 2*y100 - 95;
return 0.12457298393509812907e0 + (0.23837544771809575380e-2 + (0.19563942105711612475e-4 + (0.14396736847739470782e-6 + (0.94305490646459247016e-9 + (0.54366590583134218096e-11 + 0.27080225920000000000e-13 * t) * t) * t) * t) * t) * t;
}
case 48: {
double t = 2*y100 - 97;
return 0.12941991566142438816e0 + (0.24637684719508859484e-2 + (0.20450821127475879816e-4 + (0.15173366280523906622e-6 + (0.99907632506389027739e-9 + (0.57712760311351625221e-11 + 0.28703099555555555556e-13 * t) * t) * t) * t) * t) * t;
}
case 49: {
double t = 2*y100 - 99;
return 0.13443048593088696613e0 + (0.25474249981080823877e-2 + (0.21385669591362915223e-4 + (0.15996177579900443030e-6 + (0.10585428844575134013e-8 + (0.61258809536787882989e-11 + 0.30412080142222222222e-13 * t) * t) * t) * t) * t) * t;
}
case 50: {
double t = 2*y100 - 101;
return 0.13961217543434561353e0 + (0.26349215871051761416e-2 + (0.22371342712572567744e-4 + (0.16868008199296822247e-6 + (0.11216596910444996246e-8 + (0.65015264753090890662e-11 + 0.32210394506666666666e-13 * t) * t) * t) * t) * t) * t;
}
case 51: {
double t = 2*y100 - 103;
return 0.14497287157673800690e0 + (0.27264675383982439814e-2 + (0.23410870961050950197e-4 + (0.17791863939526376477e-6 + (0.11886425714330958106e-8 + (0.68993039665054288034e-11 + 0.34101266222222222221e-13 * t) * t) * t) * t) * t) * t;
}
case 52: {
double t = 2*y100 - 105;
return 0.15052089272774618151e0 + (0.28222846410136238008e-2 + (0.24507470422713397006e-4 + (0.18770927679626136909e-6 + (0.12597184587583370712e-8 + (0.73203433049229821618e-11 + 0.36087889048888888890e-13 * t) * t) * t) * t) * t) * t;
}
case 53: {
double t = 2*y100 - 107;
return 0.15626501395774612325e0 + (0.29226079376196624949e-2 + (0.25664553693768450545e-4 + (0.19808568415654461964e-6 + (0.13351257759815557897e-8 + (0.77658124891046760667e-11 + 0.38173420035555555555e-13 * t) * t) * t) * t) * t) * t;
}
case 54: {
double t = 2*y100 - 109;
return 0.16221449434620737567e0 + (0.30276865332726475672e-2 + (0.26885741326534564336e-4 + (0.20908350604346384143e-6 + (0.14151148144240728728e-8 + (0.82369170665974313027e-11 + 0.40360957457777777779e-13 * t) * t) * t) * t) * t) * t;
}
case 55: {
double t = 2*y100 - 111;
return 0.16837910595412130659e0 + (0.31377844510793082301e-2 + (0.28174873844911175026e-4 + (0.22074043807045782387e-6 + (0.14999481055996090039e-8 + (0.87348993661930809254e-11 + 0.42653528977777777779e-13 * t) * t) * t) * t) * t) * t;
}
case 56: {
double t = 2*y100 - 113;
return 0.17476916455659369953e0 + (0.32531815370903068316e-2 + (0.29536024347344364074e-4 + (0.23309632627767074202e-6 + (0.15899007843582444846e-8 + (0.92610375235427359475e-11 + 0.45054073102222222221e-13 * t) * t) * t) * t) * t) * t;
}
case 57: {
double t = 2*y100 - 115;
return 0.18139556223643701364e0 + (0.33741744168096996041e-2 + (0.30973511714709500836e-4 + (0.24619326937592290996e-6 + (0.16852609412267750744e-8 + (0.98166442942854895573e-11 + 0.47565418097777777779e-13 * t) * t) * t) * t) * t) * t;
}
case 58: {
double t = 2*y100 - 117;
return 0.18826980194443664549e0 + (0.35010775057740317997e-2 + (0.32491914440014267480e-4 + (0.26007572375886319028e-6 + (0.17863299617388376116e-8 + (0.10403065638343878679e-10 + 0.50190265831111111110e-13 * t) * t) * t) * t) * t) * t;
}
case 59: {
double t = 2*y100 - 119;
return 0.19540403413693967350e0 + (0.36342240767211326315e-2 + (0.34096085096200907289e-4 + (0.27479061117017637474e-6 + (0.18934228504790032826e-8 + (0.11021679075323598664e-10 + 0.52931171733333333334e-13 * t) * t) * t) * t) * t) * t;
}
case 60: {
double t = 2*y100 - 121;
return 0.20281109560651886959e0 + (0.37739673859323597060e-2 + (0.35791165457592409054e-4 + (0.29038742889416172404e-6 + (0.20068685374849001770e-8 + (0.11673891799578381999e-10 + 0.55790523093333333334e-13 * t) * t) * t) * t) * t) * t;
}
case 61: {
double t = 2*y100 - 123;
return 0.21050455062669334978e0 + (0.39206818613925652425e-2 + (0.37582602289680101704e-4 + (0.30691836231886877385e-6 + (0.21270101645763677824e-8 + (0.12361138551062899455e-10 + 0.58770520160000000000e-13 * t) * t) * t) * t) * t) * t;
}
case 62: {
double t = 2*y100 - 125;
return 0.21849873453703332479e0 + (0.40747643554689586041e-2 + (0.39476163820986711501e-4 + (0.32443839970139918836e-6 + (0.22542053491518680200e-8 + (0.13084879235290858490e-10 + 0.61873153262222222221e-13 * t) * t) * t) * t) * t) * t;
}
case 63: {
double t = 2*y100 - 127;
return 0.22680879990043229327e0 + (0.42366354648628516935e-2 + (0.41477956909656896779e-4 + (0.34300544894502810002e-6 + (0.23888264229264067658e-8 + (0.13846596292818514601e-10 + 0.65100183751111111110e-13 * t) * t) * t) * t) * t) * t;
}
case 64: {
double t = 2*y100 - 129;
return 0.23545076536988703937e0 + (0.44067409206365170888e-2 + (0.43594444916224700881e-4 + (0.36268045617760415178e-6 + (0.25312606430853202748e-8 + (0.14647791812837903061e-10 + 0.68453122631111111110e-13 * t) * t) * t) * t) * t) * t;
}
case 65: {
double t = 2*y100 - 131;
return 0.24444156740777432838e0 + (0.45855530511605787178e-2 + (0.45832466292683085475e-4 + (0.38352752590033030472e-6 + (0.26819103733055603460e-8 + (0.15489984390884756993e-10 + 0.71933206364444444445e-13 * t) * t) * t) * t) * t) * t;
}
case 66: {
double t = 2*y100 - 133;
return 0.25379911500634264643e0 + (0.47735723208650032167e-2 + (0.48199253896534185372e-4 + (0.40561404245564732314e-6 + (0.28411932320871165585e-8 + (0.16374705736458320149e-10 + 0.75541379822222222221e-13 * t) * t) * t) * t) * t) * t;
}
case 67: {
double t = 2*y100 - 135;
return 0.26354234756393613032e0 + (0.49713289477083781266e-2 + (0.50702455036930367504e-4 + (0.42901079254268185722e-6 + (0.30095422058900481753e-8 + (0.17303497025347342498e-10 + 0.79278273368888888890e-13 * t) * t) * t) * t) * t) * t;
}
case 68: {
double t = 2*y100 - 137;
return 0.27369129607732343398e0 + (0.51793846023052643767e-2 + (0.53350152258326602629e-4 + (0.45379208848865015485e-6 + (0.31874057245814381257e-8 + (0.18277905010245111046e-10 + 0.83144182364444444445e-13 * t) * t) * t) * t) * t) * t;
}
case 69: {
double t = 2*y100 - 139;
return 0.28426714781640316172e0 + (0.53983341916695141966e-2 + (0.56150884865255810638e-4 + (0.48003589196494734238e-6 + (0.33752476967570796349e-8 + (0.19299477888083469086e-10 + 0.87139049137777777779e-13 * t) * t) * t) * t) * t) * t;
}
case 70: {
double t = 2*y100 - 141;
return 0.29529231465348519920e0 + (0.56288077305420795663e-2 + (0.59113671189913307427e-4 + (0.50782393781744840482e-6 + (0.35735475025851713168e-8 + (0.20369760937017070382e-10 + 0.91262442613333333334e-13 * t) * t) * t) * t) * t) * t;
}
case 71: {
double t = 2*y100 - 143;
return 0.30679050522528838613e0 + (0.58714723032745403331e-2 + (0.62248031602197686791e-4 + (0.53724185766200945789e-6 + (0.37827999418960232678e-8 + (0.21490291930444538307e-10 + 0.95513539182222222221e-13 * t) * t) * t) * t) * t) * t;
}
case 72: {
double t = 2*y100 - 145;
return 0.31878680111173319425e0 + (0.61270341192339103514e-2 + (0.65564012259707640976e-4 + (0.56837930287837738996e-6 + (0.40035151353392378882e-8 + (0.22662596341239294792e-10 + 0.99891109760000000000e-13 * t) * t) * t) * t) * t) * t;
}
case 73: {
double t = 2*y100 - 147;
return 0.33130773722152622027e0 + (0.63962406646798080903e-2 + (0.69072209592942396666e-4 + (0.60133006661885941812e-6 + (0.42362183765883466691e-8 + (0.23888182347073698382e-10 + 0.10439349811555555556e-12 * t) * t) * t) * t) * t) * t;
}
case 74: {
double t = 2*y100 - 149;
return 0.34438138658041336523e0 + (0.66798829540414007258e-2 + (0.72783795518603561144e-4 + (0.63619220443228800680e-6 + (0.44814499336514453364e-8 + (0.25168535651285475274e-10 + 0.10901861383111111111e-12 * t) * t) * t) * t) * t) * t;
}
case 75: {
double t = 2*y100 - 151;
return 0.35803744972380175583e0 + (0.69787978834882685031e-2 + (0.76710543371454822497e-4 + (0.67306815308917386747e-6 + (0.47397647975845228205e-8 + (0.26505114141143050509e-10 + 0.11376390933333333333e-12 * t) * t) * t) * t) * t) * t;
}
case 76: {
double t = 2*y100 - 153;
return 0.37230734890119724188e0 + (0.72938706896461381003e-2 + (0.80864854542670714092e-4 + (0.71206484718062688779e-6 + (0.50117323769745883805e-8 + (0.27899342394100074165e-10 + 0.11862637614222222222e-12 * t) * t) * t) * t) * t) * t;
}
case 77: {
double t = 2*y100 - 155;
return 0.38722432730555448223e0 + (0.76260375162549802745e-2 + (0.85259785810004603848e-4 + (0.75329383305171327677e-6 + (0.52979361368388119355e-8 + (0.29352606054164086709e-10 + 0.12360253370666666667e-12 * t) * t) * t) * t) * t) * t;
}
case 78: {
double t = 2*y100 - 157;
return 0.40282355354616940667e0 + (0.79762880915029728079e-2 + (0.89909077342438246452e-4 + (0.79687137961956194579e-6 + (0.55989731807360403195e-8 + (0.30866246101464869050e-10 + 0.12868841946666666667e-12 * t) * t) * t) * t) * t) * t;
}
case 79: {
double t = 2*y100 - 159;
return 0.41914223158913787649e0 + (0.83456685186950463538e-2 + (0.94827181359250161335e-4 + (0.84291858561783141014e-6 + (0.59154537751083485684e-8 + (0.32441553034347469291e-10 + 0.13387957943111111111e-12 * t) * t) * t) * t) * t) * t;
}
case 80: {
double t = 2*y100 - 161;
return 0.43621971639463786896e0 + (0.87352841828289495773e-2 + (0.10002929142066799966e-3 + (0.89156148280219880024e-6 + (0.62480008150788597147e-8 + (0.34079760983458878910e-10 + 0.13917107176888888889e-12 * t) * t) * t) * t) * t) * t;
}
case 81: {
double t = 2*y100 - 163;
return 0.45409763548534330981e0 + (0.91463027755548240654e-2 + (0.10553137232446167258e-3 + (0.94293113464638623798e-6 + (0.65972492312219959885e-8 + (0.35782041795476563662e-10 + 0.14455745872000000000e-12 * t) * t) * t) * t) * t) * t;
}
case 82: {
double t = 2*y100 - 165;
return 0.47282001668512331468e0 + (0.95799574408860463394e-2 + (0.11135019058000067469e-3 + (0.99716373005509038080e-6 + (0.69638453369956970347e-8 + (0.37549499088161345850e-10 + 0.15003280712888888889e-12 * t) * t) * t) * t) * t) * t;
}
case 83: {
double t = 2*y100 - 167;
return 0.49243342227179841649e0 + (0.10037550043909497071e-1 + (0.11750334542845234952e-3 + (0.10544006716188967172e-5 + (0.73484461168242224872e-8 + (0.39383162326435752965e-10 + 0.15559069118222222222e-12 * t) * t) * t) * t) * t) * t;
}
case 84: {
double t = 2*y100 - 169;
return 0.51298708979209258326e0 + (0.10520454564612427224e-1 + (0.12400930037494996655e-3 + (0.11147886579371265246e-5 + (0.77517184550568711454e-8 + (0.41283980931872622611e-10 + 0.16122419680000000000e-12 * t) * t) * t) * t) * t) * t;
}
case 85: {
double t = 2*y100 - 171;
return 0.53453307979101369843e0 + (0.11030120618800726938e-1 + (0.13088741519572269581e-3 + (0.11784797595374515432e-5 + (0.81743383063044825400e-8 + (0.43252818449517081051e-10 + 0.16692592640000000000e-12 * t) * t) * t) * t) * t) * t;
}
case 86: {
double t = 2*y100 - 173;
return 0.55712643071169299478e0 + (0.11568077107929735233e-1 + (0.13815797838036651289e-3 + (0.12456314879260904558e-5 + (0.86169898078969313597e-8 + (0.45290446811539652525e-10 + 0.17268801084444444444e-12 * t) * t) * t) * t) * t) * t;
}
case 87: {
double t = 2*y100 - 175;
return 0.58082532122519320968e0 + (0.12135935999503877077e-1 + (0.14584223996665838559e-3 + (0.13164068573095710742e-5 + (0.90803643355106020163e-8 + (0.47397540713124619155e-10 + 0.17850211608888888889e-12 * t) * t) * t) * t) * t) * t;
}
case 88: {
double t = 2*y100 - 177;
return 0.60569124025293375554e0 + (0.12735396239525550361e-1 + (0.15396244472258863344e-3 + (0.13909744385382818253e-5 + (0.95651595032306228245e-8 + (0.49574672127669041550e-10 + 0.18435945564444444444e-12 * t) * t) * t) * t) * t) * t;
}
case 89: {
double t = 2*y100 - 179;
return 0.63178916494715716894e0 + (0.13368247798287030927e-1 + (0.16254186562762076141e-3 + (0.14695084048334056083e-5 + (0.10072078109604152350e-7 + (0.51822304995680707483e-10 + 0.19025081422222222222e-12 * t) * t) * t) * t) * t) * t;
}
case 90: {
double t = 2*y100 - 181;
return 0.65918774689725319200e0 + (0.14036375850601992063e-1 + (0.17160483760259706354e-3 + (0.15521885688723188371e-5 + (0.10601827031535280590e-7 + (0.54140790105837520499e-10 + 0.19616655146666666667e-12 * t) * t) * t) * t) * t) * t;
}
case 91: {
double t = 2*y100 - 183;
return 0.68795950683174433822e0 + (0.14741765091365869084e-1 + (0.18117679143520433835e-3 + (0.16392004108230585213e-5 + (0.11155116068018043001e-7 + (0.56530360194925690374e-10 + 0.20209663662222222222e-12 * t) * t) * t) * t) * t) * t;
}
case 92: {
double t = 2*y100 - 185;
return 0.71818103808729967036e0 + (0.15486504187117112279e-1 + (0.19128428784550923217e-3 + (0.17307350969359975848e-5 + (0.11732656736113607751e-7 + (0.58991125287563833603e-10 + 0.20803065333333333333e-12 * t) * t) * t) * t) * t) * t;
}
case 93: {
double t = 2*y100 - 187;
return 0.74993321911726254661e0 + (0.16272790364044783382e-1 + (0.20195505163377912645e-3 + (0.18269894883203346953e-5 + (0.12335161021630225535e-7 + (0.61523068312169087227e-10 + 0.21395783431111111111e-12 * t) * t) * t) * t) * t) * t;
}
case 94: {
double t = 2*y100 - 189;
return 0.78330143531283492729e0 + (0.17102934132652429240e-1 + (0.21321800585063327041e-3 + (0.19281661395543913713e-5 + (0.12963340087354341574e-7 + (0.64126040998066348872e-10 + 0.21986708942222222222e-12 * t) * t) * t) * t) * t) * t;
}
case 95: {
double t = 2*y100 - 191;
return 0.81837581041023811832e0 + (0.17979364149044223802e-1 + (0.22510330592753129006e-3 + (0.20344732868018175389e-5 + (0.13617902941839949718e-7 + (0.66799760083972474642e-10 + 0.22574701262222222222e-12 * t) * t) * t) * t) * t) * t;
}
case 96: {
double t = 2*y100 - 193;
return 0.85525144775685126237e0 + (0.18904632212547561026e-1 + (0.23764237370371255638e-3 + (0.21461248251306387979e-5 + (0.14299555071870523786e-7 + (0.69543803864694171934e-10 + 0.23158593688888888889e-12 * t) * t) * t) * t) * t) * t;
}
case 97: {
double t = 2*y100 - 195;
return 0.89402868170849933734e0 + (0.19881418399127202569e-1 + (0.25086793128395995798e-3 + (0.22633402747585233180e-5 + (0.15008997042116532283e-7 + (0.72357609075043941261e-10 + 0.23737194737777777778e-12 * t) * t) * t) * t) * t) * t;
}
case 98: {
double t = 2*y100 - 197;
return 0.93481333942870796363e0 + (0.20912536329780368893e-1 + (0.26481403465998477969e-3 + (0.23863447359754921676e-5 + (0.15746923065472184451e-7 + (0.75240468141720143653e-10 + 0.24309291271111111111e-12 * t) * t) * t) * t) * t) * t;
}
case 99: {
double t = 2*y100 - 199;
return 0.97771701335885035464e0 + (0.22000938572830479551e-1 + (0.27951610702682383001e-3 + (0.25153688325245314530e-5 + (0.16514019547822821453e-7 + (0.78191526829368231251e-10 + 0.24873652355555555556e-12 * t) * t) * t) * t) * t) * t;
}
  }
  // we only get here if y = 1, i.e. |x| < 4*eps, in which case
  // erfcx is within 1e-15 of 1..
  return 1.0;
}

static double sp_erfcx(double x)
{
  if (isnan(x)) {
    return x;
  }

  if (x >= 0) {
    if (x > 50) { // continued-fraction expansion is faster
      const double ispi = 0.56418958354775628694807945156; // 1 / sqrt(pi)
      if (x > 5e7) { // 1-term expansion, important to avoid overflow
        return ispi / x;
      }
      /* 5-term expansion (rely on compiler for CSE), simplified from:
                ispi / (x+0.5/(x+1/(x+1.5/(x+2/x))))  */
      return ispi*((x*x) * (x*x+4.5) + 2) / (x * ((x*x) * (x*x+5) + 3.75));
    }
    return erfcx_y100(400/(4+x));
  }
  else {
    if (x < -26.7) {
      return INFINITY;
    }
    else if (x < -6.1) {
      return 2*exp(x*x);
    }
    else {
      return 2*exp(x*x) - erfcx_y100(400/(4-x));
    }
  }
}

static double sp_airy_ai(double x) {
    const double *AN = SPB_AI_AN;

    const double *AD = SPB_AI_AD;

    const double *AFN = SPB_AI_AFN;

    const double *AFD = SPB_AI_AFD;

    const double *AGN = SPB_AI_AGN;

    const double *AGD = SPB_AI_AGD;

    int domain_flag = 0;

    double ai = (double)(0.0);

    if (isinf(x)) {
        return NAN;
    }

    if (x > (double)(103.892)) {
        return (double)(0.0);
    }

    double f;
    double g;
    double k;

    if (x < (double)(-2.09)) {
        double z = (double)(1.0) / ((double)(-2.0) * x * sqrt(-x) / (double)(3.0));

        double afn = 0.0;

        for (uint8_t index = 0; index <= 8; index++) {
            afn = afn * (z * z) + AFN[index];
        }

        double afd = 1.0;  /* p1evl: implied leading 1 */

        for (uint8_t index = 0; index <= 8; index++) {
            afd = afd * (z * z) + AFD[index];
        }

        double agn = 0.0;

        for (uint8_t index = 0; index <= 10 + 0; index++) {
            agn = agn * (z * z) + AGN[index];
        }

        double agd = 1.0;  /* p1evl: implied leading 1 */

        for (uint8_t index = 0; index <= 10 - 1; index++) {
            agd = agd * (z * z) + AGD[index];
        }

        double t = (double)(-2.0) * x * sqrt(-x) / (double)(3.0) + (double)(0.25) * M_PI;

        return (double)(5.64189583547756286948e-01) / sqrt(sqrt(-x)) * (sin(t) * ((double)(1.0) + z * z * afn / afd) - cos(t) * (z * agn / agd));
    }

    if (x >= (double)(2.09)) {
        domain_flag = 5;

        double zeta = (double)(2.0) * x * sqrt(x) / (double)(3.0);

        double an = 0.0;

        for (uint8_t index = 0; index <= 7; index++) {
            an = an * ((double)(1.0) / zeta) + AN[index];
        }

        double ad = 0.0;

        for (uint8_t index = 0; index <= 7; index++) {
            ad = ad * ((double)(1.0) / zeta) + AD[index];
        }

        ai = (double)(5.64189583547756286948e-01) * (an / ad) / ((double)(2.0) * sqrt(sqrt(x)) * exp(zeta));

        if (x > (double)(8.3203353)) {
            return ai;
        }
    }

    f = 1.0;
    g = x;
    k = 1.0;

    double m = 1.0;
    double n = x;
    double t = 1.0;
    double z = x * x * x;

    while (t > DBL_EPSILON) {
        m *= z;
        k += (double)(1.0);
        m /= k;
        n *= z;
        k += (double)(1.0);
        n /= k;
        m /= k;
        f += m;
        k += (double)(1.0);
        n /= k;
        g += n;

        t = fabs(m / f);
    }

    if ((domain_flag & 1) == 0) {
        return (double)(0.355028053887817239260) * f - (double)(0.258819403792806798405) * g;
    }

    return ai;
}

static double sp_bessel_j0(double x) {
    const double *PP = SPB_J0_PP;

    const double *PQ = SPB_J0_PQ;

    const double *QP = SPB_J0_QP;

    const double *QQ = SPB_J0_QQ;

    const double *RP = SPB_J0_RP;

    const double *RQ = SPB_J0_RQ;

    if (x < (double)(0)) {
        x = -x;
    }

    if (x <= (double)(5.0)) {
        if (x < (double)(0.00001)) {
            return (double)(1.0) - x * x / (double)(4.0);
        }

        double rp = 0.0;

        for (uint8_t index = 0; index <= 3; index++) {
            rp = rp * (x * x) + RP[index];
        }

        double rq = 1.0;  /* p1evl: implied leading 1 */

        for (uint8_t index = 0; index <= 7; index++) {
            rq = rq * (x * x) + RQ[index];
        }

        return (x * x - (double)(5.78318596294678452118e+00)) * (x * x - (double)(3.04712623436620863991e+01)) * rp / rq;
    }

    double pp = 0.0;

    for (uint8_t index = 0; index <= 6; index++) {
        pp = pp * ((double)(25.0) / (x * x)) + PP[index];
    }

    double pq = 0.0;

    for (uint8_t index = 0; index <= 6; index++) {
        pq = pq * ((double)(25.0) / (x * x)) + PQ[index];
    }

    double qp = 0.0;

    for (uint8_t index = 0; index <= 7; index++) {
        qp = qp * ((double)(25.0) / (x * x)) + QP[index];
    }

    double qq = 1.0;  /* p1evl: implied leading 1 */

    for (uint8_t index = 0; index <= 6; index++) {
        qq = qq * ((double)(25.0) / (x * x)) + QQ[index];
    }

    return (pp / pq * cos(x - (double)(0.785398163397448309615660845819875721)) - (double)(5.0) / x * (qp / qq) * sin(x - (double)(0.785398163397448309615660845819875721))) * (double)(0.797884560802865355879892119868763737) / sqrt(x);
}

static double sp_bessel_j1(double x) {
    const double *PP = SPB_J1_PP;

    const double *PQ = SPB_J1_PQ;

    const double *QP = SPB_J1_QP;

    const double *QQ = SPB_J1_QQ;

    const double *RP = SPB_J1_RP;

    const double *RQ = SPB_J1_RQ;

    if (x < (double)(0.0)) {
        return -sp_bessel_j1(-x);
    }

    if (x <= (double)(5.0)) {
        double rp = 0.0;

        for (uint8_t index = 0; index <= 3; index++) {
            rp = rp * (x * x) + RP[index];
        }

        double rq = 1.0;  /* p1evl: implied leading 1 */

        for (uint8_t index = 0; index <= 7; index++) {
            rq = rq * (x * x) + RQ[index];
        }

        return rp / rq * x * (x * x - (double)(1.46819706421238932572e+01)) * (x * x - (double)(4.92184563216946036703e+01));
    }

    double pp = 0.0;

    for (uint8_t index = 0; index <= 6; index++) {
        pp = pp * ((double)(5.0) / x * ((double)(5.0) / x)) + PP[index];
    }

    double pq = 0.0;

    for (uint8_t index = 0; index <= 6; index++) {
        pq = pq * ((double)(5.0) / x * ((double)(5.0) / x)) + PQ[index];
    }

    double qp = 0.0;

    for (uint8_t index = 0; index <= 7; index++) {
        qp = qp * ((double)(5.0) / x * ((double)(5.0) / x)) + QP[index];
    }

    double qq = 1.0;  /* p1evl: implied leading 1 */

    for (uint8_t index = 0; index <= 6; index++) {
        qq = qq * ((double)(5.0) / x * ((double)(5.0) / x)) + QQ[index];
    }

    return (pp / pq * cos(x - (double)(2.356194490192344928846982537459627163)) - (double)(5.0) / x * (qp / qq) * sin(x - (double)(2.356194490192344928846982537459627163))) * (double)(0.797884560802865355879892119868763737) / sqrt(x);
}

static double sp_bessel_y0(double x) {
    const double *PP = SPB_J0_PP;

    const double *PQ = SPB_J0_PQ;

    const double *QP = SPB_J0_QP;

    const double *QQ = SPB_J0_QQ;

    const double *YP = SPB_Y0_YP;

    const double *YQ = SPB_Y0_YQ;

    if (x <= (double)(5.0)) {
        if (x == (double)(0.0)) {
            return -INFINITY;
        }

        if (x < (double)(0.0)) {
            return NAN;
        }

        double yp = 0.0;

        for (uint8_t index = 0; index <= 7; index++) {
            yp = yp * (x * x) + YP[index];
        }

        double yq = 1.0;  /* p1evl: implied leading 1 */

        for (uint8_t index = 0; index <= 6; index++) {
            yq = yq * (x * x) + YQ[index];
        }

        return yp / yq + ((double)(0.636619772367581343075535053490057448) * log(x) * sp_bessel_j0(x));
    }

    double pp = 0.0;

    for (uint8_t index = 0; index <= 6; index++) {
        pp = pp * ((double)(25.0) / (x * x)) + PP[index];
    }

    double pq = 0.0;

    for (uint8_t index = 0; index <= 6; index++) {
        pq = pq * ((double)(25.0) / (x * x)) + PQ[index];
    }

    double qp = 0.0;

    for (uint8_t index = 0; index <= 7; index++) {
        qp = qp * ((double)(25.0) / (x * x)) + QP[index];
    }

    double qq = 1.0;  /* p1evl: implied leading 1 */

    for (uint8_t index = 0; index <= 6; index++) {
        qq = qq * ((double)(25.0) / (x * x)) + QQ[index];
    }

    return (pp / pq * sin(x - (double)(0.785398163397448309615660845819875721)) + (double)(5.0) / x * (qp / qq) * cos(x - (double)(0.785398163397448309615660845819875721))) * (double)(0.797884560802865355879892119868763737) / sqrt(x);
}

static double sp_bessel_y1(double x) {
    const double *PP = SPB_J1_PP;

    const double *PQ = SPB_J1_PQ;

    const double *QP = SPB_J1_QP;

    const double *QQ = SPB_J1_QQ;

    const double *YP = SPB_Y1_YP;

    const double *YQ = SPB_Y1_YQ;

    if (x <= (double)(5.0)) {
        if (x == (double)(0.0)) {
            return -INFINITY;
        }

        if (x <= (double)(0.0)) {
            return NAN;
        }

        double yp = 0.0;

        for (uint8_t index = 0; index <= 5; index++) {
            yp = yp * (x * x) + YP[index];
        }

        double yq = 1.0;  /* p1evl: implied leading 1 */

        for (uint8_t index = 0; index <= 7; index++) {
            yq = yq * (x * x) + YQ[index];
        }

        return x * (yp / yq) + ((double)(0.636619772367581343075535053490057448) * (sp_bessel_j1(x) * log(x) - (double)(1.0) / x));
    }

    double pp = 0.0;

    for (uint8_t index = 0; index <= 6; index++) {
        pp = pp * ((double)(5.0) / x * ((double)(5.0) / x)) + PP[index];
    }

    double pq = 0.0;

    for (uint8_t index = 0; index <= 6; index++) {
        pq = pq * ((double)(5.0) / x * ((double)(5.0) / x)) + PQ[index];
    }

    double qp = 0.0;

    for (uint8_t index = 0; index <= 7; index++) {
        qp = qp * ((double)(5.0) / x * ((double)(5.0) / x)) + QP[index];
    }

    double qq = 1.0;  /* p1evl: implied leading 1 */

    for (uint8_t index = 0; index <= 6; index++) {
        qq = qq * ((double)(5.0) / x * ((double)(5.0) / x)) + QQ[index];
    }

    return (pp / pq * sin(x - (double)(2.356194490192344928846982537459627163)) + (double)(5.0) / x * (qp / qq) * cos(x - (double)(2.356194490192344928846982537459627163))) * (double)(0.797884560802865355879892119868763737) / sqrt(x);
}

static double sp_chebyshev_polynomial_t(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (fabs(x) == (double)(1.0)) {
        if (x > (double)(0.0) || n % 2 == 0) {
            return (double)(1.0);
        }

        return (double)(-1.0);
    }

    if ((n > 6) && (fabs(x) < (double)(1.0))) {
        return cos(n * acos(x));
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x;
    }

    double p = (double)(1.0);
    double q = x;
    double r = x;

    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = (x + x) * q - p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_chebyshev_polynomial_u(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (fabs(x) == (double)(1.0)) {
        if (x > (double)(0.0) || n % 2 == 0) {
            return n + 1;
        }

        return -(n + 1);
    }

    if ((n > 8) && (fabs(x) < (double)(1.0))) {
        if (sin(acos(x)) != (double)(0.0)) {
            return sin((n + 1) * acos(x)) / sin(acos(x));
        }

        return (n + 1) * cos((n + 1) * acos(x)) / x;
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x + x;
    }

    double p = (double)(1.0);
    double q = x + x;
    double r = 0.0;

    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = (x + x) * q - p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_chebyshev_polynomial_v(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (fabs(x) == (double)(1.0)) {
        if (x > (double)(0.0)) {
            return (double)(1.0);
        }

        if (n % 2 == 0) {
            return n + n + 1;
        }

        return -(n + n + 1);
    }

    if ((n > 8) && (fabs(x) < (double)(1.0))) {
        if (sin(acos(x) / (double)(2.0)) != (double)(1.0)) {
            return cos((n + (double)(0.5)) * acos(x)) / cos(acos(x) / (double)(2.0));
        }

        if (n % 2 == 0) {
            return n + n + 1;
        }

        return -(n + n + 1);
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x + x - (double)(1.0);
    }

    double p = (double)(1.0);
    double q = x + x - (double)(1.0);
    double r = 0.0;

    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = (x + x) * q - p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_chebyshev_polynomial_w(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (fabs(x) == (double)(1.0)) {
        if (x > (double)(0.0)) {
            return n + n + 1;
        }

        if (n % 2 == 0) {
            return (double)(1.0);
        }

        return (double)(-1.0);
    }

    if ((n > 8) && (fabs(x) < (double)(1.0))) {
        if (cos(acos(x) / (double)(2.0)) != (double)(1.0)) {
            return sin((n + (double)(0.5)) * acos(x)) / sin(acos(x) / (double)(2.0));
        }

        if (x > (double)(0.0)) {
            return n + n + 1;
        }

        if (n % 2 == 0) {
            return (double)(1.0);
        }

        return (double)(-1.0);
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x + x + (double)(1.0);
    }

    double p = (double)(1.0);
    double q = x + x + (double)(1.0);
    double r = 0.0;

    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = (x + x) * q - p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_hermite_polynomial_h(double x, int64_t n, int64_t limit) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x + x;
    }

    if (n > limit) {
        return NAN;
    }

    double p = (double)(1.0);
    double q = x + x;
    double r = (double)(0.0);

    for (int64_t k = 2; k < n + n; k += 2) {
        r = (x + x) * q - k * p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_hermite_polynomial_he(double x, int64_t n, int64_t limit) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x;
    }

    if (n > limit) {
        return NAN;
    }

    double p = (double)(1.0);
    double q = x;
    double r = 0.0;

    for (int64_t k = 1; k < n; k++) {
        r = x * q - k * p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_laguerre_polynomial_l(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (fabs(x) == (double)(0.0)) {
        return (double)(1.0);
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return (double)(1.0) - x;
    }

    double p = (double)(1.0);
    double q = (double)(1.0) - x;
    double r = 0.0;

    for (int64_t k = 1; (k < n) && !isnan(q); k++) {
        r = (((k + k) + ((double)(1.0) - x)) * q - k * p) / (k + 1);
        p = q;
        q = r;
    }

    return r;
}

static double sp_legendre_polynomial_p(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (fabs(x) == (double)(1.0)) {
        if (x > (double)(0.0) || n % 2 == 0) {
            return (double)(1.0);
        }

        return (double)(-1.0);
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x;
    }

    double p = (double)(1.0);
    double q = x;
    double r = 0.0;

    for (int64_t k = 1; (k < n) && !isnan(q); k++) {
        r = ((k + k + 1) * x * q - k * p) / (k + 1);
        p = q;
        q = r;
    }

    return r;
}

static double sp_modified_bessel_i0(double x) {
    const double *A = SPB_I0_A;

    const double *B = SPB_I0_B;

    double p = ((double)(0));
    double q = 0.0;

    if (fabs(x) <= (double)(8.0)) {
        double a = A[0];

        for (uint8_t index = 1; index < 30; index++) {
            p = q;
            q = a;
            a = ((fabs(x) / (double)(2.0)) - (double)(2.0)) * q - p + A[index];
        }

        return exp(fabs(x)) * ((double)(0.5) * (a - p));
    }

    double b = B[0];

    for (uint8_t index = 1; index < 25; index++) {
        p = q;
        q = b;
        b = ((double)(32.0) / fabs(x) - (double)(2.0)) * q - p + B[index];
    }

    return exp(fabs(x)) * ((double)(0.5) * (b - p)) / sqrt(fabs(x));
}

static double sp_modified_bessel_i1(double x) {
    const double *A = SPB_I1_A;

    const double *B = SPB_I1_B;

    double p = ((double)(0));
    double q = 0.0;

    if (fabs(x) <= (double)(8.0)) {
        double a = A[0];

        for (uint8_t index = 1; index < 29; index++) {
            p = q;
            q = a;
            a = ((fabs(x) / (double)(2.0)) - (double)(2.0)) * q - p + A[index];
        }

        if (x < (double)(0.0)) {
            return -((double)(0.5) * (a - p) * fabs(x) * exp(fabs(x)));
        }

        return (double)(0.5) * (a - p) * fabs(x) * exp(fabs(x));
    }

    double b = B[0];

    for (uint8_t index = 1; index < 25; index++) {
        p = q;
        q = b;
        b = ((double)(32.0) / fabs(x) - (double)(2.0)) * q - p + B[index];
    }

    if (x < (double)(0.0)) {
        return -(exp(fabs(x)) * ((double)(0.5) * (b - p)) / sqrt(fabs(x)));
    }

    return exp(fabs(x)) * ((double)(0.5) * (b - p)) / sqrt(fabs(x));
}

static double sp_modified_bessel_k0(double x) {
    const double *A = SPB_K0_A;

    const double *B = SPB_K0_B;

    if (x == (double)(0.0)) {
        return INFINITY;
    }

    if (x < (double)(0.0)) {
        return NAN;
    }

    double p = ((double)(0));
    double q = 0.0;

    if (x <= (double)(2.0)) {
        double a = A[0];

        for (uint8_t index = 1; index < 10; index++) {
            p = q;
            q = a;
            a = (x * x - (double)(2.0)) * q - p + A[index];
        }

        return (double)(0.5) * (a - p) - log(0.5 * x) * sp_modified_bessel_i0(x);
    }

    double b = B[0];

    for (uint8_t index = 1; index < 25; index++) {
        p = q;
        q = b;
        b = ((double)(8.0) / x - (double)(2.0)) * q - p + B[index];
    }

    return exp(-x) * ((double)(0.5) * (b - p)) / sqrt(x);
}

static double sp_modified_bessel_k1(double x) {
    const double *A = SPB_K1_A;

    const double *B = SPB_K1_B;

    if (x == (double)(0.0)) {
        return INFINITY;
    }

    if (x < (double)(0.0)) {
        return NAN;
    }

    double p = ((double)(0));
    double q = 0.0;

    if (x <= (double)(2.0)) {
        double a = A[0];

        for (uint8_t index = 1; index < 11; index++) {
            p = q;
            q = a;
            a = (x * x - (double)(2.0)) * q - p + A[index];
        }

        return log((double)(0.5) * x) * sp_modified_bessel_i1(x) + (double)(0.5) * (a - p) / x;
    }

    double b = B[0];

    for (uint8_t index = 1; index < 25; index++) {
        p = q;
        q = b;
        b = ((double)(8.0) / x - (double)(2.0)) * q - p + B[index];
    }

    return exp(-x) * ((double)(0.5) * (b - p)) / sqrt(x);
}

static double sp_scaled_modified_bessel_k0(double x) {
    const double *A = SPB_K0_A;

    const double *B = SPB_K0_B;

    if (x == (double)(0.0)) {
        return INFINITY;
    }

    if (x < (double)(0.0)) {
        return NAN;
    }

    double p = ((double)(0));
    double q = 0.0;

    if (x <= (double)(2.0)) {
        double a = A[0];

        for (uint64_t index = 1; index < 10; index++) {
            p = q;
            q = a;
            a = (x * x - (double)(2.0)) * q - p + A[index];
        }

        return ((double)(0.5) * (a - p) - log((double)(0.5) * x) * sp_modified_bessel_i0(x)) * exp(x);
    }

    double b = B[0];

    for (uint64_t index = 1; index < 25; index++) {
        p = q;
        q = b;
        b = ((double)(8.0) / x - (double)(2.0)) * q - p + B[index];
    }

    return (double)(0.5) * (b - p) / sqrt(x);
}

static double sp_scaled_modified_bessel_k1(double x) {
    const double *A = SPB_K1_A;

    const double *B = SPB_K1_B;

    if (x == (double)(0.0)) {
        return INFINITY;
    }

    if (x < (double)(0.0)) {
        return NAN;
    }

    double p = ((double)(0));
    double q = 0.0;

    if (x <= (double)(2.0)) {
        double a = A[0];

        for (uint64_t index = 1; index < 11; index++) {
            p = q;
            q = a;
            a = (x * x - (double)(2.0)) * q - p + A[index];
        }

        return (log((double)(0.5) * x) * sp_modified_bessel_i1(x) + (double)(0.5) * (a - p) / x) * exp(x);
    }

    double b = B[0];

    for (uint64_t index = 1; index < 25; index++) {
        p = q;
        q = b;
        b = ((double)(8.0) / x - (double)(2.0)) * q - p + B[index];
    }

    return ((double)(0.5) * (b - p) / sqrt(x));
}

static double sp_shifted_chebyshev_polynomial_t(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (x == (double)(1.0)) {
        return (double)(1.0);
    }

    if (x == (double)(0.0)) {
        if (n % 2 == 0) {
            return (double)(1.0);
        }

        return (double)(-1.0);
    }

    if ((n > 6) && (fabs(x + x - (double)(1.0)) < (double)(1.0))) {
        return cos(n * acos(x + x - (double)(1.0)));
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x + x - (double)(1.0);
    }

    double p = (double)(1.0);
    double q = x + x - (double)(1.0);
    double r = 0.0;

    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = (x + x - (double)(1.0) + (x + x - (double)(1.0))) * q - p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_shifted_chebyshev_polynomial_u(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (x == (double)(1.0)) {
        return n + 1;
    }

    if (x == (double)(0.0)) {
        if (n % 2 == 0) {
            return n + 1;
        }

        return -(n + 1);
    }

    if ((n > 6) && (fabs(x + x - (double)(1.0)) < (double)(1.0))) {
        if (sin(acos(x + x - (double)(1.0))) != (double)(0.0)) {
            return sin((n + 1) * acos(x + x - (double)(1.0))) / sin(acos(x + x - (double)(1.0)));
        }

        return (n + 1) * cos((n + 1) * acos(x + x - (double)(1.0))) / (x + x - (double)(1.0));
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x + x - (double)(1.0) + (x + x - (double)(1.0));
    }

    double p = (double)(1.0);
    double q = x + x - (double)(1.0) + (x + x - (double)(1.0));
    double r = 0.0;

    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = (x + x - (double)(1.0) + (x + x - (double)(1.0))) * q - p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_shifted_chebyshev_polynomial_v(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (x == (double)(1.0)) {
        return (double)(1.0);
    }

    if (x == (double)(0.0)) {
        if (n % 2 == 0) {
            return (n + n + 1);
        }

        return -(n + n + 1);
    }

    if ((n > 6) && (fabs(x + x - (double)(1.0)) < (double)(1.0))) {
        if (sin(acos(x + x - (double)(1.0)) / (double)(2.0)) != (double)(1.0)) {
            return cos((n + (double)(0.5)) * acos(x + x - (double)(1.0))) / cos(acos(x + x - (double)(1.0)) / (double)(2.0));
        }

        if (n % 2 == 0) {
            return n + n + 1;
        }

        return -(n + n + 1);
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x + x - (double)(1.0) + (x + x - (double)(1.0)) - (double)(1.0);
    }

    double p = (double)(1.0);
    double q = x + x - (double)(1.0) + (x + x - (double)(1.0)) - (double)(1.0);
    double r = 0.0;

    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = (x + x - (double)(1.0) + (x + x - (double)(1.0))) * q - p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_shifted_chebyshev_polynomial_w(double x, int64_t n) {
    if (n < 0) {
        return (double)(0.0);
    }

    if (x == (double)(1.0)) {
        return n + n + 1;
    }

    if (x == (double)(0.0)) {
        if (n % 2 == 0) {
            return (double)(1.0);
        }

        return (double)(-1.0);
    }

    if ((n > 4) && (fabs(x + x - (double)(1.0)) < (double)(1.0))) {
        if (cos(acos(x + x - (double)(1.0)) / (double)(2.0)) != (double)(1.0)) {
            return sin((n + (double)(0.5)) * acos(x + x - (double)(1.0))) / sin(acos(x + x - (double)(1.0)) / (double)(2.0));
        }

        if (n % 2 == 0) {
            return (double)(1.0);
        }

        return (double)(-1.0);
    }

    if (n == 0) {
        return (double)(1.0);
    }

    if (n == 1) {
        return x + x - (double)(1.0) + (x + x - (double)(1.0)) + (double)(1.0);
    }

    double p = (double)(1.0);
    double q = x + x - (double)(1.0) + (x + x - (double)(1.0)) + (double)(1.0);
    double r = 0.0;

    for (int64_t k = 2; (k <= n) && !isnan(q); k++) {
        r = (x + x - (double)(1.0) + (x + x - (double)(1.0))) * q - p;
        p = q;
        q = r;
    }

    return r;
}

static double sp_spherical_bessel_j0(double x) {
    if (isinf(x)) {
        return (double)(0.0);
    }

    if (fabs(x) < (double)(0.5)) {
        return (double)(1.0) + x * x * ((double)(-1.0) / (double)(6.0) + x * x * ((double)(1.0) / (double)(120.0) + x * x * ((double)(-1.0) / (double)(5040.0) + x * x * ((double)(1.0) / (double)(362880.0) + x * x * ((double)(-1.0) / (double)(39916800.0) + x * x * ((double)(1.0) / (double)(6227020800.0)))))));
    }

    return sin(x) / x;
}


/* erfinv (float64; float32 is em_erfinvf in ember_math.h): a rational first guess
   refined by two Newton steps on erf, or for |y| > 0.5 on log(erfc), which keeps
   full double precision as |y| -> 1. */
static double sp_erfinv(double y) {
    static const double a[4] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
    static const double b[4] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801};
    static const double c[4] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
    static const double d[2] = {3.543889200, 1.637067800};
    double ay = fabs(y), x, z, num, dem;
    if (ay > 1.0) return NAN;
    if (ay == 1.0) return copysign(INFINITY, y);
    if (ay <= 0.7) {
        z = y * y;
        num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];
        dem = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0;
        x = y * num / dem;
    } else {
        z = sqrt(-log((1.0 - ay) / 2.0));
        num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
        dem = (d[1] * z + d[0]) * z + 1.0;
        x = copysign(num, y) / dem;
    }
    if (ay <= 0.5) {
        x = x - (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
        x = x - (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
        return x;
    }
    /* near +-1, Newton on log(erfc(|x|)) = log(1 - |y|) (1 - |y| is exact here):
       the residual keeps full relative precision in the tail; the first guess is
       good to about 1e-6, so three quadratic steps reach double precision */
    double q = 1.0 - ay, lq = log(q), xa = fabs(x);
    for (int i = 0; i < 3; i++)
        xa += (log(erfc(xa)) - lq) * sp_erfcx(xa) / M_2_SQRTPI;
    return copysign(xa, y);
}


static double sp_i0e(double x) {
    x = fabs(x);
    if (x <= 8.0) return chbevl(x / 2.0 - 2.0, chebyshev_coefficients_i0e_A(), 30);
    return chbevl(32.0 / x - 2.0, chebyshev_coefficients_i0e_B(), 25) / sqrt(x);
}

/* polygamma(n, x) for n >= 0 (the caller rejects negative n); FAC is
   (-1)^(n+1) n! (from sp_polygamma_fac), computed once per loop */
static double sp_polygamma(int64_t n, double x, double fac) {
    if (n == 0) return sp_digamma(x);
    if (n == 1) return sp_trigamma(x);
    double z = n <= 63 && x >= 0.015625 && x <= 1e4 ? sp_zeta_impl((double)(n + 1), x, 1)
                                                    : sp_zeta((double)(n + 1), x);
    return fac * z;
}
static double sp_polygamma_fac(int64_t n) {
    /* n! as a product (exact to 22!, then one rounding a factor) where it is finite:
       exp(lgamma) is off by up to |lgamma| ulps */
    double f = 1.0;
    if (n <= 170)
        for (int64_t k = 2; k <= n; k++) f *= (double)k;
    else
        f = exp(lgamma((double)n + 1.0));
    return ((n % 2) ? 1.0 : -1.0) * f;
}

static double sp_xlog1py(double x, double y) {
    if (isnan(y)) return NAN;
    if (x == 0) return 0.0;
    return x * log1p(y);
}

/* the degree argument of the polynomial families, as PyTorch's conversion behaves
   on x86-64: NaN, infinities and out-of-range values become INT64_MIN (a negative
   degree, so the polynomial is 0) */
static int64_t sp_degree(double n) {
    if (!(fabs(n) < 9.2e18)) return INT64_MIN;
    return (int64_t)n;
}


/* ---------------------------------------------------------------------------
   strided loops: ptrs = (out, x) or (out, x, y); float32 goes through double */

#define UNARY2(NAME, EXPR, EXPR32)                                                     \
    static void NAME##_f64(char **p, const int64_t *s, int64_t n, const void *aux) {  \
        char *o = p[0];                                                                \
        const char *a = p[1];                                                          \
        (void)aux;                                                                     \
        for (int64_t i = 0; i < n; i++, o += s[0], a += s[1]) {                        \
            double x = *(const double *)a;                                             \
            *(double *)o = (EXPR);                                                     \
        }                                                                              \
    }                                                                                  \
    static void NAME##_f32(char **p, const int64_t *s, int64_t n, const void *aux) {  \
        char *o = p[0];                                                                \
        const char *a = p[1];                                                          \
        (void)aux;                                                                     \
        for (int64_t i = 0; i < n; i++, o += s[0], a += s[1]) {                        \
            double x = *(const float *)a;                                              \
            *(float *)o = (float)(EXPR32);                                             \
        }                                                                              \
    }
#define UNARY(NAME, EXPR) UNARY2(NAME, EXPR, EXPR)

#define BINARY(NAME, EXPR, EXPR32)                                                     \
    static void NAME##_f64(char **p, const int64_t *s, int64_t n, const void *aux) {  \
        char *o = p[0];                                                                \
        const char *a = p[1], *b = p[2];                                               \
        (void)aux;                                                                     \
        for (int64_t i = 0; i < n; i++, o += s[0], a += s[1], b += s[2]) {             \
            double x = *(const double *)a, y = *(const double *)b;                     \
            *(double *)o = (EXPR);                                                     \
        }                                                                              \
    }                                                                                  \
    static void NAME##_f32(char **p, const int64_t *s, int64_t n, const void *aux) {  \
        char *o = p[0];                                                                \
        const char *a = p[1], *b = p[2];                                               \
        (void)aux;                                                                     \
        for (int64_t i = 0; i < n; i++, o += s[0], a += s[1], b += s[2]) {             \
            double x = *(const float *)a, y = *(const float *)b;                       \
            *(float *)o = (float)(EXPR32);                                             \
        }                                                                              \
    }

UNARY(digamma, sp_digamma(x))
/* polygamma: n from aux, its factor n! once per call */
#define POLYGAMMA_LOOP(SFX, T)                                                         \
    static void polygamma_##SFX(char **p, const int64_t *s, int64_t n, const void *aux) { \
        int64_t order = *(const int64_t *)aux;                                         \
        double fac = sp_polygamma_fac(order);                                          \
        char *o = p[0];                                                                \
        const char *a = p[1];                                                          \
        for (int64_t i = 0; i < n; i++, o += s[0], a += s[1])                          \
            *(T *)o = (T)sp_polygamma(order, (double)*(const T *)a, fac);              \
    }
POLYGAMMA_LOOP(f64, double)
POLYGAMMA_LOOP(f32, float)
UNARY(erfinv, sp_erfinv(x))
UNARY(i0, sp_i0(x))
UNARY(i0e, sp_i0e(x))
UNARY(i1, sp_i1(x))
UNARY(i1e, sp_i1e(x))
UNARY(mi0, sp_modified_bessel_i0(x))
UNARY(mi1, sp_modified_bessel_i1(x))
UNARY(k0, sp_modified_bessel_k0(x))
UNARY(k1, sp_modified_bessel_k1(x))
UNARY(k0e, sp_scaled_modified_bessel_k0(x))
UNARY(k1e, sp_scaled_modified_bessel_k1(x))
UNARY(j0, sp_bessel_j0(x))
UNARY(j1, sp_bessel_j1(x))
UNARY(y0, sp_bessel_y0(x))
UNARY(y1, sp_bessel_y1(x))
UNARY(sph_j0, sp_spherical_bessel_j0(x))
UNARY(airy_ai, sp_airy_ai(x))

BINARY(zeta, sp_zeta(x, y), sp_zeta(x, y))
BINARY(igamma, sp_igamma(x, y), sp_igamma_e(x, y, SP_IGAM_EPS32))
BINARY(igammac, sp_igammac(x, y), sp_igammac_e(x, y, SP_IGAM_EPS32))
BINARY(xlog1py, sp_xlog1py(x, y), sp_xlog1py(x, y))
BINARY(cheb_t, sp_chebyshev_polynomial_t(x, sp_degree(y)),
       sp_chebyshev_polynomial_t(x, sp_degree(y)))
BINARY(cheb_u, sp_chebyshev_polynomial_u(x, sp_degree(y)),
       sp_chebyshev_polynomial_u(x, sp_degree(y)))
BINARY(cheb_v, sp_chebyshev_polynomial_v(x, sp_degree(y)),
       sp_chebyshev_polynomial_v(x, sp_degree(y)))
BINARY(cheb_w, sp_chebyshev_polynomial_w(x, sp_degree(y)),
       sp_chebyshev_polynomial_w(x, sp_degree(y)))
BINARY(scheb_t, sp_shifted_chebyshev_polynomial_t(x, sp_degree(y)),
       sp_shifted_chebyshev_polynomial_t(x, sp_degree(y)))
BINARY(scheb_u, sp_shifted_chebyshev_polynomial_u(x, sp_degree(y)),
       sp_shifted_chebyshev_polynomial_u(x, sp_degree(y)))
BINARY(scheb_v, sp_shifted_chebyshev_polynomial_v(x, sp_degree(y)),
       sp_shifted_chebyshev_polynomial_v(x, sp_degree(y)))
BINARY(scheb_w, sp_shifted_chebyshev_polynomial_w(x, sp_degree(y)),
       sp_shifted_chebyshev_polynomial_w(x, sp_degree(y)))
/* PyTorch caps the Hermite degree per dtype (beyond it the result is NaN) */
BINARY(herm_h, sp_hermite_polynomial_h(x, sp_degree(y), 512),
       sp_hermite_polynomial_h(x, sp_degree(y), 128))
BINARY(herm_he, sp_hermite_polynomial_he(x, sp_degree(y), 512),
       sp_hermite_polynomial_he(x, sp_degree(y), 128))
BINARY(laguerre, sp_laguerre_polynomial_l(x, sp_degree(y)),
       sp_laguerre_polynomial_l(x, sp_degree(y)))
BINARY(legendre, sp_legendre_polynomial_p(x, sp_degree(y)),
       sp_legendre_polynomial_p(x, sp_degree(y)))

/* erfinv: the |y| <= 0.999 formula, the full one for the tail, +-1, NaN, |y| > 1 */
#define ERFINV_F32_OK(y) (fabsf(y) <= 0.999f)
#define ERFINV_F32_LOOP(ATTR, NAME) \
    FIXUP_LOOP(ATTR, NAME, float, em_erfinvf_mid, ERFINV_F32_OK, em_erfinvf)
ERFINV_F32_LOOP(, erfinv_vec_f32)
/* float64 erfinv: the loop of erfinv_f64_impl.h, here for the generic table; the
   AVX2 and AVX-512 copies live in special_isa_*.c, compiled with FMA */
#include "erfinv_f64_impl.h"
static ERFINV_F64_LOOP(, erfinv_vec_f64)
/* ndtr, log_ndtr, erfcx, ndtri and entr: special_erf_impl.h, the AVX2 and AVX-512
   copies in special_isa_*.c */
#include "special_erf_impl.h"
SPE_LOOPS(static, )
/* float32 digamma vectorised in double for x > 0 (other inputs, and strided rows,
   take sp_digamma): below 10, psi(x) = psi(x + 10) - sum_{k<10} 1/(x + k) with the
   sum as one fraction (positive terms: no cancellation in it, one division), psi(y)
   for y >= 10 from sp_digamma's asymptotic series */
static inline __attribute__((always_inline)) double sp_digamma_pos(double x) {
    int small = x < 10.0;
    double xs = small ? x : 1.0;
    double num = 1.0, den = xs;
    for (int k = 1; k < 10; k++) {
        double t = xs + k;
        num = num * t + den;
        den = den * t;
    }
    double y = small ? x + 10.0 : x;
    double iy = 1.0 / y, z = iy * iy;
    double a = 8.33333333333333333333E-2;
    a = a * z - 2.10927960927960927961E-2;
    a = a * z + 7.57575757575757575758E-3;
    a = a * z - 4.16666666666666666667E-3;
    a = a * z + 3.96825396825396825397E-3;
    a = a * z - 8.33333333333333333333E-3;
    a = a * z + 8.33333333333333333333E-2;
    double r = em_log_d(y) - 0.5 * iy - z * a;
    return small ? r - num / den : r;
}
#define DIGAMMA_F32_POS(x) ((float)sp_digamma_pos((double)(x)))
#define DIGAMMA_F32_OK(x) ((x) > 0.0f)
#define DIGAMMA_F32(x) ((float)sp_digamma((double)(x)))
#define DIGAMMA_F32_LOOP(ATTR, NAME) \
    FIXUP_LOOP(ATTR, NAME, float, DIGAMMA_F32_POS, DIGAMMA_F32_OK, DIGAMMA_F32)
DIGAMMA_F32_LOOP(, digamma_vec_f32)
/* float64 digamma for 0 < x < inf, branch-free so it vectorises: sp_digamma's
   steps (1/x subtracted while x < 10, then psi(10) or the asymptotic series)
   with ember_math.h's log; the loop runs it over blocks and sends the block's
   other inputs (x <= 0, inf, NaN) to sp_digamma */
static inline __attribute__((always_inline)) double sp_digamma_pos_d(double x) {
    double r = 0.0;
    for (int k = 0; k < 10; k++) {          /* x > 0 reaches 10 in 10 steps */
        int m = x < 10.0;
        r -= m ? 1.0 / x : 0.0;
        x = m ? x + 1.0 : x;
    }
    double z = 1.0 / (x * x);
    double a = 8.33333333333333333333E-2;
    a = a * z - 2.10927960927960927961E-2;
    a = a * z + 7.57575757575757575758E-3;
    a = a * z - 4.16666666666666666667E-3;
    a = a * z + 3.96825396825396825397E-3;
    a = a * z - 8.33333333333333333333E-3;
    a = a * z + 8.33333333333333333333E-2;
    double y = x < 1.0e17 ? z * a : 0.0;
    double v = r + em_log_d(x) - (0.5 / x) - y;
    return x == 10.0 ? r + 2.25175258906672110764 : v;
}
#define DIGAMMA_F64_OK(x) (((x) > 0.0) & ((x) < INFINITY))
#define DIGAMMA_F64_LOOP(ATTR, NAME) \
    FIXUP_LOOP(ATTR, NAME, double, sp_digamma_pos_d, DIGAMMA_F64_OK, sp_digamma)
DIGAMMA_F64_LOOP(, digamma_vec_f64)
#if defined(__x86_64__) || defined(__i386__)
#define SP_HAVE_ISA 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
/* FMA contraction (off under -std=c11) makes the double polynomials 1.6x faster */
ERFINV_F32_LOOP(__attribute__((optimize("fp-contract=fast"))), erfinv_vec_f32_avx2)
DIGAMMA_F32_LOOP(__attribute__((optimize("fp-contract=fast"))), digamma_vec_f32_avx2)
DIGAMMA_F64_LOOP(, digamma_vec_f64_avx2)
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
/* and 512-bit vectors: this double-precision loop runs about 1.5x faster with them */
ERFINV_F32_LOOP(__attribute__((target("prefer-vector-width=512"), optimize("fp-contract=fast"))),
                erfinv_vec_f32_avx512)
DIGAMMA_F32_LOOP(__attribute__((target("prefer-vector-width=512"), optimize("fp-contract=fast"))),
                 digamma_vec_f32_avx512)
DIGAMMA_F64_LOOP(__attribute__((target("prefer-vector-width=512"))), digamma_vec_f64_avx512)
#pragma GCC pop_options
#else
#define SP_HAVE_ISA 0
#endif

void em_erfinv_f64_avx2(char **p, const int64_t *s, int64_t n, const void *aux);
void em_erfinv_f64_avx512(char **p, const int64_t *s, int64_t n, const void *aux);
#define SPE_DECL(NAME)                                                              \
    void NAME##_avx2(char **p, const int64_t *s, int64_t n, const void *aux);      \
    void NAME##_avx512(char **p, const int64_t *s, int64_t n, const void *aux);
SPE_DECL(em_spe_ndtr_f32) SPE_DECL(em_spe_ndtr_f64) SPE_DECL(em_spe_log_ndtr_f32)
SPE_DECL(em_spe_log_ndtr_f64) SPE_DECL(em_spe_erfcx_f32) SPE_DECL(em_spe_erfcx_f64)
SPE_DECL(em_spe_ndtri_f32) SPE_DECL(em_spe_ndtri_f64) SPE_DECL(em_spe_entr_f32)
SPE_DECL(em_spe_entr_f64)
SPE_DECL(em_spig_igamma_f32) SPE_DECL(em_spig_igamma_f64) SPE_DECL(em_spig_igammac_f32)
SPE_DECL(em_spig_igammac_f64)
/* the loop for the running CPU: generic G, AVX2 A2 or AVX-512 A5 */
#if SP_HAVE_ISA
static em_loop sp_isa_pick(em_loop g, em_loop a2, em_loop a5) {
    int isa = ember_cpu_isa();
    return isa >= 2 ? a5 : isa == 1 ? a2 : g;
}
#define SP_ISA(G, A2, A5) sp_isa_pick(G, A2, A5)
#else
#define SP_ISA(G, A2, A5) (G)
#endif

/* Vectorised loops for i0, i0e, i1, i1e and trigamma (polygamma(1, x)), float32
   (evaluated in double, rounded once) and float64.

   The fast forms are branch-free so the element loop vectorises: the Bessel
   functions run Cephes' Chebyshev series (chbevl) with the range's table chosen per
   lane (the shorter table padded with leading zeros, which leaves Clenshaw's sums
   unchanged), ember_math.h's exp and the hardware sqrt; float32 drops the leading
   coefficients whose sum stays below 1e-11 of the function (far under a float32
   ulp) and evaluates the rest in powers of y.  Inputs outside a fast form's range go to the scalar form. */

/* sum' c_k T_k(y) as chbevl(y, A + offa, na) where small, else chbevl(y, B + offb,
   nb) */
static inline __attribute__((always_inline)) double sp_chb2(double y, int small,
                                                             const double *A, int na,
                                                             const double *B, int nb,
                                                             int exact) {
    const int n = na > nb ? na : nb;
    double b0 = 0.0, b1 = 0.0, b2 = 0.0, l0 = 0.0, l1 = 0.0, l2 = 0.0;
#pragma GCC unroll 32
    for (int j = 0; j < n; j++) {
        int ja = j - (n - na), jb = j - (n - nb);
        double c = small ? (ja >= 0 ? A[ja] : 0.0) : (jb >= 0 ? B[jb] : 0.0);
        b2 = b1;
        b1 = b0;
        l2 = l1;
        l1 = l0;
        if (exact) {
            /* the generic table (no FMA): the sums in two parts (Dekker's product,
               TwoSum).  They grow and cancel in b0 - b2, where plain roundings put
               i0e 7.5 and i1e 6.9 ulps off (torch: 4.8, 5.7); the FMA tables
               (contracted) keep their one-part form */
            double ph = y * b1, pl = em_prod_err_d(y, b1, ph);
            double sh = ph - b2, sl = em_twosum_err(ph, -b2, sh);
            double th = sh + c, tl = em_twosum_err(sh, c, th);
            double lo = (sl + tl) + (pl + (y * l1 - l2));
            b0 = th + lo;
            l0 = em_twosum_err(th, lo, b0);
        } else {
            b0 = y * b1 - b2 + c;
        }
    }
    return exact ? 0.5 * ((b0 - b2) + (l0 - l2)) : 0.5 * (b0 - b2);
}

#define SP_I0E_A SPB_I0_A
#define SP_I0E_B SPB_I0_B
#define SP_I1E_A SPB_I1_A
#define SP_I1E_B SPB_I1_B

/* float32's truncated series (the tables above without their first 7 (i0e A), 6
   (i1e A) or 14 (B) coefficients) in powers of y, highest first: the exact
   conversion rounded to double; Horner on them is good to 1e-15 over y in [-2, 2]
   and costs two operations a term to Clenshaw's three */
static const double SP_I0E_A_F[23] = {
    1.4775263315648199e-12, -8.6341314572077793e-12, 1.5873465882440148e-11,
    -7.8173019480399802e-11, 6.7113396210091695e-10, -3.2016700737900107e-09,
    1.2863214726619638e-08, -5.4260320273365696e-08, 2.2129498151131891e-07,
    -8.3161231244555245e-07, 2.9190470933214282e-06, -9.6068511452089812e-06,
    2.9471619052379467e-05, -8.3960725421325673e-05, 0.00022178457113951672,
    -0.00054328829562729191, 0.0012386757013321777, -0.0026551064239029674,
    0.0054589634470847883, -0.011130430050927263, 0.023628907140372926,
    -0.056502163448544807, 0.20700192122391162,
};
static const double SP_I0E_B_F[11] = {
    -6.6079059202238567e-12, -1.5749582639816208e-11, 7.2023632756161784e-11,
    3.8877636316959433e-10, 1.4192827172149724e-09, 9.178895385337114e-09,
    9.2706520163417686e-08, 1.3929494448058757e-06, 3.4054030749981123e-05,
    0.0016802759791142777, 0.40217650944431715,
};
static const double SP_I1E_A_F[23] = {
    1.6118966829727874e-13, -9.9198719888247182e-13, 2.3219204469053187e-12,
    -1.248571744097823e-11, 9.7606291762828091e-11, -4.9807893271750916e-10,
    2.2444584674271605e-09, -1.0303553130863019e-08, 4.5493547825992842e-08,
    -1.881082778366267e-07, 7.3373976104501566e-07, -2.7020268748437566e-06,
    9.359437659161785e-06, -3.041310896823597e-05, 9.2523433169184111e-05,
    -0.00026305722580744238, 0.00069804022665768603, -0.0017275013060732895,
    0.0039854627257459342, -0.008560325763322307, 0.017014399977912292,
    -0.030562169015399456, 0.044687709875601382,
};
static const double SP_I1E_B_F[11] = {
    7.0629037183068909e-12, 1.6263017915077442e-11, -8.0116516244821611e-11,
    -4.2585433434552618e-10, -1.5945887303473558e-09, -1.0761832538971702e-08,
    -1.1464856550276814e-07, -1.8798963942275972e-06, -5.4808952973216711e-05,
    -0.004874788582411217, 0.38939845902655851,
};

/* sum a_k y^k from A (where small) or B, highest power first, padded as sp_chb2 */
static inline __attribute__((always_inline)) double sp_poly2(double y, int small,
                                                             const double *A, int na,
                                                             const double *B, int nb) {
    const int n = na > nb ? na : nb;
    double p = 0.0;
#pragma GCC unroll 32
    for (int j = 0; j < n; j++) {
        int ja = j - (n - na), jb = j - (n - nb);
        p = p * y + (small ? (ja >= 0 ? A[ja] : 0.0) : (jb >= 0 ? B[jb] : 0.0));
    }
    return p;
}

/* the Chebyshev part of I0 or I1 at ax = |x| (exp(-ax) I0(ax), or exp(-ax) I1(ax) /
   ax below 8; exp(-ax) sqrt(ax) I(ax) above), as the scalar forms */
#define SP_I0_CHB(y, small, ex) sp_chb2(y, small, SP_I0E_A, 30, SP_I0E_B, 25, ex)
#define SP_I1_CHB(y, small, ex) sp_chb2(y, small, SP_I1E_A, 29, SP_I1E_B, 25, ex)

/* KIND: 0 i0, 1 i0e, 2 i1, 3 i1e; F32: float32's short series; EX: sp_chb2's exact */
static inline __attribute__((always_inline)) double sp_bessel_i_fast(double x, int kind,
                                                                     int f32, int ex) {
    double ax = fabs(x);
    int small = ax <= 8.0;
    double y = small ? ax * 0.5 - 2.0 : 32.0 / ax - 2.0;
    double c = f32 ? (kind < 2 ? sp_poly2(y, small, SP_I0E_A_F, 23, SP_I0E_B_F, 11)
                                : sp_poly2(y, small, SP_I1E_A_F, 23, SP_I1E_B_F, 11))
                    : (kind < 2 ? SP_I0_CHB(y, small, ex) : SP_I1_CHB(y, small, ex));
    double e = (kind & 1) ? 1.0 : em_exp_d(ax);
    double sq = sqrt(ax);
    double r;
    if (kind == 2)
        r = small ? e * ax * c : (e * c) / sq;
    else if (kind == 3)
        r = small ? c * ax : c / sq;
    else
        r = small ? e * c : (e * c) / sq;
    return kind >= 2 && x < 0.0 ? -r : r;
}
/* i0 and i1 leave the fast form where exp(|x|) could overflow (and for NaN); the
   scaled ones hold everywhere (NaN propagates, +-inf gives +-0 as the scalar form) */
#define SP_IX_OK(x) (fabs(x) <= 700.0)
#define SP_IXE_OK(x) 1
#define SP_I0_D(x) sp_bessel_i_fast(x, 0, 0, SP_CHB_EXACT)
#define SP_I0E_D(x) sp_bessel_i_fast(x, 1, 0, SP_CHB_EXACT)
#define SP_I1_D(x) sp_bessel_i_fast(x, 2, 0, SP_CHB_EXACT)
#define SP_I1E_D(x) sp_bessel_i_fast(x, 3, 0, SP_CHB_EXACT)
#define SP_I0_F(x) ((float)sp_bessel_i_fast((double)(x), 0, 1, 0))
#define SP_I0E_F(x) ((float)sp_bessel_i_fast((double)(x), 1, 1, 0))
#define SP_I1_F(x) ((float)sp_bessel_i_fast((double)(x), 2, 1, 0))
#define SP_I1E_F(x) ((float)sp_bessel_i_fast((double)(x), 3, 1, 0))
#define SP_I0_FS(x) ((float)sp_i0((double)(x)))
#define SP_I0E_FS(x) ((float)sp_i0e((double)(x)))
#define SP_I1_FS(x) ((float)sp_i1((double)(x)))
#define SP_I1E_FS(x) ((float)sp_i1e((double)(x)))

/* trigamma for 0 < x < inf.  float64: psi1(x) = sum_{k<10} 1/(x+k)^2 + psi1(x+10)
   below 10 (the k = 0 term alone, so tiny x overflows only where psi1 does, the
   others three to a division: positive terms, no cancellation), then the
   asymptotic series 1/y + 1/(2y^2) + sum B_2k / y^(2k+1) through B_18 (its
   remainder is below 1e-17 relative for y >= 10) */
static inline __attribute__((always_inline)) double sp_trigamma_pos_d(double x) {
    int small = x < 10.0;
    double xs = small ? x : 1.0;
    double r = 1.0 / (xs * xs);
#pragma GCC unroll 3
    for (int g = 1; g < 10; g += 3) {
        double a = xs + g, b = xs + (g + 1), c = xs + (g + 2);
        a *= a;
        b *= b;
        c *= c;
        r += (b * c + a * (b + c)) / (a * b * c);
    }
    double y = small ? x + 10.0 : x;
    double iy = 1.0 / y, z = iy * iy;
    double s = 43867.0 / 798.0;
    s = 3617.0 / 510.0 - z * s;
    s = 7.0 / 6.0 - z * s;
    s = 691.0 / 2730.0 - z * s;
    s = 5.0 / 66.0 - z * s;
    s = 1.0 / 30.0 - z * s;
    s = 1.0 / 42.0 - z * s;
    s = 1.0 / 30.0 - z * s;
    s = 1.0 / 6.0 - z * s;
    double t = (1.0 + 0.5 * iy + z * s) * iy;
    return small ? r + t : t;
}
/* float32 (in double): below 6, sum_{k<6} 1/(x+k)^2 as one fraction (its terms are
   positive and the products stay far inside double's range for float32 x > 0),
   then the series through B_10 (remainder below 1e-10 relative for y >= 6) */
static inline __attribute__((always_inline)) double sp_trigamma_pos_f(double x) {
    int small = x < 6.0;
    double xs = small ? x : 1.0;
    double num = 1.0, den = xs * xs;
#pragma GCC unroll 6
    for (int k = 1; k < 6; k++) {
        double t = xs + k;
        t *= t;
        num = num * t + den;
        den = den * t;
    }
    double y = small ? x + 6.0 : x;
    double iy = 1.0 / y, z = iy * iy;
    double s = 5.0 / 66.0;
    s = 1.0 / 30.0 - z * s;
    s = 1.0 / 42.0 - z * s;
    s = 1.0 / 30.0 - z * s;
    s = 1.0 / 6.0 - z * s;
    double t = (1.0 + 0.5 * iy + z * s) * iy;
    return small ? num / den + t : t;
}
#define SP_TRIGAMMA_D_OK(x) (((x) > 0.0) & ((x) < INFINITY))
#define SP_TRIGAMMA_F_OK(x) (((x) > 0.0f) & ((x) < INFINITY))
#define SP_TRIGAMMA_F(x) ((float)sp_trigamma_pos_f((double)(x)))
#define SP_TRIGAMMA_FS(x) ((float)sp_trigamma((double)(x)))

#define SP_BESSEL_LOOPS(ATTR, SFX)                                                       \
    FIXUP_LOOP(ATTR, i0_vec_f64##SFX, double, SP_I0_D, SP_IX_OK, sp_i0)                 \
    FIXUP_LOOP(ATTR, i0e_vec_f64##SFX, double, SP_I0E_D, SP_IXE_OK, sp_i0e)             \
    FIXUP_LOOP(ATTR, i1_vec_f64##SFX, double, SP_I1_D, SP_IX_OK, sp_i1)                 \
    FIXUP_LOOP(ATTR, i1e_vec_f64##SFX, double, SP_I1E_D, SP_IXE_OK, sp_i1e)             \
    FIXUP_LOOP(ATTR, i0_vec_f32##SFX, float, SP_I0_F, SP_IX_OK, SP_I0_FS)               \
    FIXUP_LOOP(ATTR, i0e_vec_f32##SFX, float, SP_I0E_F, SP_IXE_OK, SP_I0E_FS)           \
    FIXUP_LOOP(ATTR, i1_vec_f32##SFX, float, SP_I1_F, SP_IX_OK, SP_I1_FS)               \
    FIXUP_LOOP(ATTR, i1e_vec_f32##SFX, float, SP_I1E_F, SP_IXE_OK, SP_I1E_FS)           \
    FIXUP_LOOP(ATTR, trigamma_vec_f64##SFX, double, sp_trigamma_pos_d, SP_TRIGAMMA_D_OK, \
               sp_trigamma)                                                              \
    FIXUP_LOOP(ATTR, trigamma_vec_f32##SFX, float, SP_TRIGAMMA_F, SP_TRIGAMMA_F_OK,      \
               SP_TRIGAMMA_FS)

#define SP_CHB_EXACT 1          /* the generic copies: no FMA */
SP_BESSEL_LOOPS(, )
#undef SP_CHB_EXACT
#define SP_CHB_EXACT 0
#if SP_HAVE_ISA
#pragma GCC push_options
#pragma GCC target("avx2,fma")
SP_BESSEL_LOOPS(__attribute__((optimize("fp-contract=fast"))), _avx2)
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
SP_BESSEL_LOOPS(__attribute__((target("prefer-vector-width=512"), optimize("fp-contract=fast"))),
                _avx512)
#pragma GCC pop_options
#endif

#define SP_BESSEL_PICK(NAME) SP_ISA(NAME, NAME##_avx2, NAME##_avx512)

em_loop em_sp_zeta_loop(int poly, int dtype);

/* polygamma(n, x): trigamma's loop for n = 1, the zeta loop (special_zeta_impl.h)
   for 2 <= n <= 30, the scalar loop otherwise */
#define SP_POLYGAMMA_LOOP(T, DT)                                                         \
    static void polygamma_vec_##T(char **p, const int64_t *s, int64_t n, const void *aux) { \
        int64_t order = *(const int64_t *)aux;                                           \
        if (order == 1)                                                                  \
            SP_BESSEL_PICK(trigamma_vec_##T)(p, s, n, aux);                              \
        else if (order >= 2 && order <= 30)                                              \
            em_sp_zeta_loop(1, DT)(p, s, n, aux);                                        \
        else                                                                             \
            polygamma_##T(p, s, n, aux);                                                 \
    }
SP_POLYGAMMA_LOOP(f32, EM_F32)
SP_POLYGAMMA_LOOP(f64, EM_F64)

/* the vectorised loop of a unary op, or NULL where special.c's table holds it */
static em_loop sp_bessel_unary(int op, int dtype) {
    int f32 = dtype == EM_F32;
    if (dtype != EM_F32 && dtype != EM_F64) return NULL;
    switch (op) {
    case EM_SP_I0: return f32 ? SP_BESSEL_PICK(i0_vec_f32) : SP_BESSEL_PICK(i0_vec_f64);
    case EM_SP_I0E: return f32 ? SP_BESSEL_PICK(i0e_vec_f32) : SP_BESSEL_PICK(i0e_vec_f64);
    case EM_SP_I1: return f32 ? SP_BESSEL_PICK(i1_vec_f32) : SP_BESSEL_PICK(i1_vec_f64);
    case EM_SP_I1E: return f32 ? SP_BESSEL_PICK(i1e_vec_f32) : SP_BESSEL_PICK(i1e_vec_f64);
    case EM_SP_POLYGAMMA: return f32 ? polygamma_vec_f32 : polygamma_vec_f64;
    default: return NULL;
    }
}

#define PAIR(NAME) {NAME##_f32, NAME##_f64}

static const em_loop UNARY_LOOPS[EM_SP_NUNARY][2] = {
    PAIR(digamma), PAIR(polygamma), {erfinv_vec_f32, erfinv_f64}, PAIR(em_spe_erfcx),
    PAIR(em_spe_ndtr), PAIR(em_spe_ndtri), PAIR(em_spe_log_ndtr), PAIR(i0), PAIR(i0e), PAIR(i1),
    PAIR(i1e), PAIR(mi0),
    PAIR(mi1), PAIR(k0), PAIR(k1), PAIR(k0e), PAIR(k1e), PAIR(j0), PAIR(j1), PAIR(y0),
    PAIR(y1), PAIR(sph_j0), PAIR(airy_ai), PAIR(em_spe_entr),
};

static const em_loop BINARY_LOOPS[EM_SP_NBINARY][2] = {
    PAIR(zeta), PAIR(igamma), PAIR(igammac), PAIR(xlog1py), PAIR(cheb_t), PAIR(cheb_u),
    PAIR(cheb_v), PAIR(cheb_w), PAIR(scheb_t), PAIR(scheb_u), PAIR(scheb_v), PAIR(scheb_w),
    PAIR(herm_h), PAIR(herm_he), PAIR(laguerre), PAIR(legendre),
};

/* polygamma's scalar form and its factor, for the zeta loop's rare lanes */
double em_sp_polygamma_ref(int64_t n, double x, double fac) {
    return sp_polygamma(n, x, fac);
}
double em_sp_polygamma_fac(int64_t n) {
    return sp_polygamma_fac(n);
}

double em_digamma(double x) {
    return sp_digamma(x);
}

/* the scalar form of a unary op, and the strided loop of a binary one: the
   vectorised Bessel-family loops (special_bessel.c) fall back on them */
double em_sp_unary_ref(int op, double x) {
    double r;
    char *p[2] = {(char *)&r, (char *)&x};
    const int64_t s[2] = {8, 8};
    UNARY_LOOPS[op][1](p, s, 1, NULL);
    return r;
}

void em_sp_binary_ref(int op, int dtype, char **p, const int64_t *s, int64_t n,
                      const void *aux) {
    BINARY_LOOPS[op][dtype == EM_F32 ? 0 : 1](p, s, n, aux);
}

em_loop em_sp_bessel_loop(int binary, int op, int dtype);

em_loop em_special_unary(int op, int dtype) {
    if (op < 0 || op >= EM_SP_NUNARY) return NULL;
    em_loop vec = em_sp_bessel_loop(0, op, dtype);
    if (vec) return vec;
    em_loop bessel = sp_bessel_unary(op, dtype);
    if (bessel) return bessel;
    if (op == EM_SP_DIGAMMA && dtype == EM_F32)
        return SP_ISA(digamma_vec_f32, digamma_vec_f32_avx2, digamma_vec_f32_avx512);
    if (op == EM_SP_DIGAMMA && dtype == EM_F64)
        return SP_ISA(digamma_vec_f64, digamma_vec_f64_avx2, digamma_vec_f64_avx512);
    if (op == EM_SP_ERFINV && dtype == EM_F32)
        return SP_ISA(erfinv_vec_f32, erfinv_vec_f32_avx2, erfinv_vec_f32_avx512);
    if (op == EM_SP_ERFINV && dtype == EM_F64)
        return SP_ISA(erfinv_vec_f64, em_erfinv_f64_avx2, em_erfinv_f64_avx512);
#define SPE_PICK(OP, NAME)                                                             \
    if (op == OP && dtype == EM_F32)                                                   \
        return SP_ISA(NAME##_f32, NAME##_f32_avx2, NAME##_f32_avx512);                 \
    if (op == OP && dtype == EM_F64)                                                   \
        return SP_ISA(NAME##_f64, NAME##_f64_avx2, NAME##_f64_avx512);
    SPE_PICK(EM_SP_NDTR, em_spe_ndtr)
    SPE_PICK(EM_SP_LOG_NDTR, em_spe_log_ndtr)
    SPE_PICK(EM_SP_ERFCX, em_spe_erfcx)
    SPE_PICK(EM_SP_NDTRI, em_spe_ndtri)
    SPE_PICK(EM_SP_ENTR, em_spe_entr)
#undef SPE_PICK
    return dtype == EM_F32 ? UNARY_LOOPS[op][0] : dtype == EM_F64 ? UNARY_LOOPS[op][1] : NULL;
}

em_loop em_special_binary(int op, int dtype) {
    if (op < 0 || op >= EM_SP_NBINARY) return NULL;
    if (op == EM_SP_ZETA && (dtype == EM_F32 || dtype == EM_F64))
        return em_sp_zeta_loop(0, dtype);
    em_loop vec = em_sp_bessel_loop(1, op, dtype);
    if (vec) return vec;
    if ((op == EM_SP_IGAMMA || op == EM_SP_IGAMMAC) && (dtype == EM_F32 || dtype == EM_F64)) {
        int f32 = dtype == EM_F32;
        /* the block loops of special_igam_impl.h on AVX2 / AVX-512, the scalar
           loops on the generic table */
        if (op == EM_SP_IGAMMA)
            return f32 ? SP_ISA(igamma_f32, em_spig_igamma_f32_avx2, em_spig_igamma_f32_avx512)
                       : SP_ISA(igamma_f64, em_spig_igamma_f64_avx2, em_spig_igamma_f64_avx512);
        return f32 ? SP_ISA(igammac_f32, em_spig_igammac_f32_avx2, em_spig_igammac_f32_avx512)
                   : SP_ISA(igammac_f64, em_spig_igammac_f64_avx2, em_spig_igammac_f64_avx512);
    }
    return dtype == EM_F32 ? BINARY_LOOPS[op][0] : dtype == EM_F64 ? BINARY_LOOPS[op][1] : NULL;
}

