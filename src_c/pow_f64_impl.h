/* float64 pow for a > 0 finite and b finite, the loops' vectorised kernel (CPU
   only: its tables are host arrays; the CUDA kernels call the device pow).  The
   method of ARM's optimized-routines pow: log a in two parts from a 128-entry
   table, then exp of b log a (also carried in two parts) from a 128-entry table
   of 2^(j/128).  Within 0.52 ulp; the tables are gathered per lane.

   log: a = 2^k z with z in [0x1.69555p-1, 0x1.69555p0) split into 128 intervals;
   the interval's c has a 1/c of at most 9 bits, so r = z/c - 1 is exact
   (|r| < 0.00574), and log a = k ln2 + log c + log1p(r) with log c rounded to a
   multiple of 2^-43 (k ln2_hi + log c is exact) plus its tail.  log1p(r) =
   r - r^2/2 + r^3 Q(r), Q of degree 5 (relative error 2^-68.7 of log1p).
   exp: x = (k 128 + j) ln2/128 + r, |r| <= ln2/256, 2^(j/128) = s (1 + t) with s
   the double nearest and t its relative tail, e^r - 1 - r = r^2 P(r) with P of
   degree 4 (absolute error 2^-77). */
#ifndef EMBER_POW_F64_IMPL_H
#define EMBER_POW_F64_IMPL_H

static const double em_pw_invc[128] = {
    0x1.6a00000000000p+0, 0x1.6800000000000p+0, 0x1.6600000000000p+0, 0x1.6400000000000p+0,
    0x1.6200000000000p+0, 0x1.6000000000000p+0, 0x1.5e00000000000p+0, 0x1.5c00000000000p+0,
    0x1.5a00000000000p+0, 0x1.5800000000000p+0, 0x1.5600000000000p+0, 0x1.5600000000000p+0,
    0x1.5400000000000p+0, 0x1.5200000000000p+0, 0x1.5000000000000p+0, 0x1.4e00000000000p+0,
    0x1.4c00000000000p+0, 0x1.4a00000000000p+0, 0x1.4a00000000000p+0, 0x1.4800000000000p+0,
    0x1.4600000000000p+0, 0x1.4400000000000p+0, 0x1.4200000000000p+0, 0x1.4000000000000p+0,
    0x1.4000000000000p+0, 0x1.3e00000000000p+0, 0x1.3c00000000000p+0, 0x1.3a00000000000p+0,
    0x1.3a00000000000p+0, 0x1.3800000000000p+0, 0x1.3600000000000p+0, 0x1.3400000000000p+0,
    0x1.3400000000000p+0, 0x1.3200000000000p+0, 0x1.3000000000000p+0, 0x1.3000000000000p+0,
    0x1.2e00000000000p+0, 0x1.2c00000000000p+0, 0x1.2c00000000000p+0, 0x1.2a00000000000p+0,
    0x1.2800000000000p+0, 0x1.2600000000000p+0, 0x1.2600000000000p+0, 0x1.2400000000000p+0,
    0x1.2400000000000p+0, 0x1.2200000000000p+0, 0x1.2000000000000p+0, 0x1.2000000000000p+0,
    0x1.1e00000000000p+0, 0x1.1c00000000000p+0, 0x1.1c00000000000p+0, 0x1.1a00000000000p+0,
    0x1.1a00000000000p+0, 0x1.1800000000000p+0, 0x1.1600000000000p+0, 0x1.1600000000000p+0,
    0x1.1400000000000p+0, 0x1.1400000000000p+0, 0x1.1200000000000p+0, 0x1.1000000000000p+0,
    0x1.1000000000000p+0, 0x1.0e00000000000p+0, 0x1.0e00000000000p+0, 0x1.0c00000000000p+0,
    0x1.0c00000000000p+0, 0x1.0a00000000000p+0, 0x1.0a00000000000p+0, 0x1.0800000000000p+0,
    0x1.0800000000000p+0, 0x1.0600000000000p+0, 0x1.0400000000000p+0, 0x1.0400000000000p+0,
    0x1.0200000000000p+0, 0x1.0200000000000p+0, 0x1.0000000000000p+0, 0x1.0000000000000p+0,
    0x1.fc00000000000p-1, 0x1.f800000000000p-1, 0x1.f400000000000p-1, 0x1.f000000000000p-1,
    0x1.ec00000000000p-1, 0x1.e800000000000p-1, 0x1.e400000000000p-1, 0x1.e200000000000p-1,
    0x1.de00000000000p-1, 0x1.da00000000000p-1, 0x1.d600000000000p-1, 0x1.d400000000000p-1,
    0x1.d000000000000p-1, 0x1.cc00000000000p-1, 0x1.ca00000000000p-1, 0x1.c600000000000p-1,
    0x1.c400000000000p-1, 0x1.c000000000000p-1, 0x1.be00000000000p-1, 0x1.ba00000000000p-1,
    0x1.b800000000000p-1, 0x1.b400000000000p-1, 0x1.b200000000000p-1, 0x1.ae00000000000p-1,
    0x1.ac00000000000p-1, 0x1.aa00000000000p-1, 0x1.a600000000000p-1, 0x1.a400000000000p-1,
    0x1.a000000000000p-1, 0x1.9e00000000000p-1, 0x1.9c00000000000p-1, 0x1.9a00000000000p-1,
    0x1.9600000000000p-1, 0x1.9400000000000p-1, 0x1.9200000000000p-1, 0x1.9000000000000p-1,
    0x1.8c00000000000p-1, 0x1.8a00000000000p-1, 0x1.8800000000000p-1, 0x1.8600000000000p-1,
    0x1.8400000000000p-1, 0x1.8200000000000p-1, 0x1.7e00000000000p-1, 0x1.7c00000000000p-1,
    0x1.7a00000000000p-1, 0x1.7800000000000p-1, 0x1.7600000000000p-1, 0x1.7400000000000p-1,
    0x1.7200000000000p-1, 0x1.7000000000000p-1, 0x1.6e00000000000p-1, 0x1.6c00000000000p-1,
};
static const double em_pw_logc[128] = {
    -0x1.62c82f2b9c800p-2, -0x1.5d1bdbf580800p-2, -0x1.5767717455800p-2, -0x1.51aad872df800p-2,
    -0x1.4be5f95777800p-2, -0x1.4618bc21c6000p-2, -0x1.404308686a800p-2, -0x1.3a64c55694800p-2,
    -0x1.347dd9a988000p-2, -0x1.2e8e2bae12000p-2, -0x1.2895a13de8800p-2, -0x1.2895a13de8800p-2,
    -0x1.22941fbcf7800p-2, -0x1.1c898c1699800p-2, -0x1.1675cababa800p-2, -0x1.1058bf9ae4800p-2,
    -0x1.0a324e2739000p-2, -0x1.0402594b4d000p-2, -0x1.0402594b4d000p-2, -0x1.fb9186d5e4000p-3,
    -0x1.ef0adcbdc6000p-3, -0x1.e27076e2af000p-3, -0x1.d5c216b4fc000p-3, -0x1.c8ff7c79aa000p-3,
    -0x1.c8ff7c79aa000p-3, -0x1.bc286742d9000p-3, -0x1.af3c94e80c000p-3, -0x1.a23bc1fe2b000p-3,
    -0x1.a23bc1fe2b000p-3, -0x1.9525a9cf45000p-3, -0x1.87fa06520d000p-3, -0x1.7ab890210e000p-3,
    -0x1.7ab890210e000p-3, -0x1.6d60fe719d000p-3, -0x1.5ff3070a79000p-3, -0x1.5ff3070a79000p-3,
    -0x1.526e5e3a1b000p-3, -0x1.44d2b6ccb8000p-3, -0x1.44d2b6ccb8000p-3, -0x1.371fc201e9000p-3,
    -0x1.29552f81ff000p-3, -0x1.1b72ad52f6000p-3, -0x1.1b72ad52f6000p-3, -0x1.0d77e7cd09000p-3,
    -0x1.0d77e7cd09000p-3, -0x1.fec9131dbe000p-4, -0x1.e27076e2b0000p-4, -0x1.e27076e2b0000p-4,
    -0x1.c5e548f5bc000p-4, -0x1.a926d3a4ae000p-4, -0x1.a926d3a4ae000p-4, -0x1.8c345d631a000p-4,
    -0x1.8c345d631a000p-4, -0x1.6f0d28ae56000p-4, -0x1.51b073f062000p-4, -0x1.51b073f062000p-4,
    -0x1.341d7961be000p-4, -0x1.341d7961be000p-4, -0x1.16536eea38000p-4, -0x1.f0a30c0118000p-5,
    -0x1.f0a30c0118000p-5, -0x1.b42dd71198000p-5, -0x1.b42dd71198000p-5, -0x1.77458f632c000p-5,
    -0x1.77458f632c000p-5, -0x1.39e87b9fec000p-5, -0x1.39e87b9fec000p-5, -0x1.f829b0e780000p-6,
    -0x1.f829b0e780000p-6, -0x1.7b91b07d58000p-6, -0x1.fc0a8b0fc0000p-7, -0x1.fc0a8b0fc0000p-7,
    -0x1.fe02a6b100000p-8, -0x1.fe02a6b100000p-8, 0x0.0p+0, 0x0.0p+0,
    0x1.0101575890000p-7, 0x1.0205658938000p-6, 0x1.8492528c90000p-6, 0x1.0415d89e74000p-5,
    0x1.466aed42e0000p-5, 0x1.894aa149fc000p-5, 0x1.ccb73cdddc000p-5, 0x1.eea31c006c000p-5,
    0x1.1973bd1466000p-4, 0x1.3bdf5a7d1e000p-4, 0x1.5e95a4d97a000p-4, 0x1.700d30aeac000p-4,
    0x1.9335e5d594000p-4, 0x1.b6ac88dad6000p-4, 0x1.c885801bc4000p-4, 0x1.ec739830a2000p-4,
    0x1.fe89139dbe000p-4, 0x1.1178e8227e000p-3, 0x1.1aa2b7e23f000p-3, 0x1.2d1610c868000p-3,
    0x1.365fcb0159000p-3, 0x1.4913d8333b000p-3, 0x1.527e5e4a1b000p-3, 0x1.6574ebe8c1000p-3,
    0x1.6f0128b757000p-3, 0x1.7898d85445000p-3, 0x1.8beafeb390000p-3, 0x1.95a5adcf70000p-3,
    0x1.a93ed3c8ae000p-3, 0x1.b31d8575bd000p-3, 0x1.bd087383be000p-3, 0x1.c6ffbc6f01000p-3,
    0x1.db13db0d49000p-3, 0x1.e530effe71000p-3, 0x1.ef5ade4dd0000p-3, 0x1.f991c6cb3b000p-3,
    0x1.07138604d5800p-2, 0x1.0c42d67616000p-2, 0x1.1178e8227e800p-2, 0x1.16b5ccbacf800p-2,
    0x1.1bf99635a6800p-2, 0x1.214456d0eb800p-2, 0x1.2bef07cdc9000p-2, 0x1.314f1e1d36000p-2,
    0x1.36b6776be1000p-2, 0x1.3c25277333000p-2, 0x1.419b423d5e800p-2, 0x1.4718dc271c800p-2,
    0x1.4c9e09e173000p-2, 0x1.522ae0738a000p-2, 0x1.57bf753c8d000p-2, 0x1.5d5bddf596000p-2,
};
static const double em_pw_logct[128] = {
    0x1.ab42428375680p-48, -0x1.ca508d8e0f720p-46, -0x1.362a4d5b6506dp-45, -0x1.684e49eb067d5p-49,
    -0x1.41b6993293ee0p-47, 0x1.3d82f484c84ccp-46, 0x1.c42f3ed820b3ap-50, 0x1.0b1c686519460p-45,
    0x1.5594dd4c58092p-45, 0x1.67b1e99b72bd8p-45, 0x1.5ca14b6cfb03fp-46, 0x1.5ca14b6cfb03fp-46,
    -0x1.65a242853da76p-46, -0x1.fafbc68e75404p-46, 0x1.f1fc63382a8f0p-46, -0x1.6a8c4fd055a66p-45,
    -0x1.c6bee7ef4030ep-47, -0x1.036b89ef42d7fp-48, -0x1.036b89ef42d7fp-48, 0x1.d572aab993c87p-47,
    0x1.b26b79c86af24p-45, -0x1.72f4f543fff10p-46, 0x1.1ba91bbca681bp-45, 0x1.7794f689f8434p-45,
    0x1.7794f689f8434p-45, 0x1.94eb0318bb78fp-46, 0x1.a4e633fcd9066p-52, -0x1.58c64dc46c1eap-45,
    -0x1.58c64dc46c1eap-45, -0x1.ad1d904c1d4e3p-45, 0x1.bbdbf7fdbfa09p-45, 0x1.bdb9072534a58p-45,
    0x1.bdb9072534a58p-45, -0x1.0e46aa3b2e266p-46, -0x1.e9e439f105039p-46, -0x1.e9e439f105039p-46,
    -0x1.0de8b90075b8fp-45, 0x1.70cc16135783cp-46, 0x1.70cc16135783cp-46, 0x1.178864d27543ap-48,
    -0x1.48d301771c408p-45, -0x1.e80a41811a396p-45, -0x1.e80a41811a396p-45, 0x1.a699688e85bf4p-47,
    0x1.a699688e85bf4p-47, -0x1.575545ca333f2p-45, 0x1.a342c2af0003cp-45, 0x1.a342c2af0003cp-45,
    -0x1.d0c57585fbe06p-46, 0x1.53935e85baac8p-45, 0x1.53935e85baac8p-45, 0x1.37c294d2f5668p-46,
    0x1.37c294d2f5668p-46, -0x1.69737c93373dap-45, 0x1.f025b61c65e57p-46, 0x1.f025b61c65e57p-46,
    0x1.c5edaccf913dfp-45, 0x1.c5edaccf913dfp-45, 0x1.47c5e768fa309p-46, 0x1.d599e83368e91p-45,
    0x1.d599e83368e91p-45, 0x1.c827ae5d6704cp-46, 0x1.c827ae5d6704cp-46, -0x1.cfc4634f2a1eep-45,
    -0x1.cfc4634f2a1eep-45, 0x1.502b7f526feaap-48, 0x1.502b7f526feaap-48, -0x1.980267c7e09e4p-45,
    -0x1.980267c7e09e4p-45, -0x1.88d5493faa639p-45, -0x1.f1e7cf6d3a69cp-50, -0x1.f1e7cf6d3a69cp-50,
    -0x1.9e23f0dda40e4p-46, -0x1.9e23f0dda40e4p-46, 0x0.0p+0, 0x0.0p+0,
    -0x1.0c76b999d2be8p-46, -0x1.3dc5b06e2f7d2p-45, -0x1.aa0ba325a0c34p-45, 0x1.111c05cf1d753p-47,
    -0x1.c167375bdfd28p-45, -0x1.97995d05a267dp-46, -0x1.a68f247d82807p-46, -0x1.e113e4fc93b7bp-47,
    -0x1.5325d560d9e9bp-45, 0x1.cc85ea5db4ed7p-45, -0x1.c69063c5d1d1ep-45, 0x1.c1e8da99ded32p-49,
    0x1.3115c3abd47dap-45, -0x1.390802bf768e5p-46, 0x1.646d1c65aacd3p-45, -0x1.dc068afe645e0p-45,
    -0x1.534d64fa10afdp-45, 0x1.1ef78ce2d07f2p-45, 0x1.ca78e44389934p-45, 0x1.39d6ccb81b4a1p-47,
    0x1.62fa8234b7289p-51, 0x1.5837954fdb678p-45, 0x1.633e8e5697dc7p-45, 0x1.9cf8b2c3c2e78p-46,
    -0x1.5118de59c21e1p-45, -0x1.c661070914305p-46, -0x1.73d54aae92cd1p-47, 0x1.7f22858a0ff6fp-47,
    -0x1.8724350562169p-45, -0x1.c358d4eace1aap-47, -0x1.d4bc4595412b6p-45, -0x1.1ec72c5962bd2p-48,
    -0x1.aff2af715b035p-45, 0x1.212276041f430p-51, -0x1.a211565bb8e11p-51, 0x1.bcbecca0cdf30p-46,
    0x1.89cdb16ed4e91p-48, 0x1.7188b163ceae9p-45, -0x1.c210e63a5f01cp-45, 0x1.b9acdf7a51681p-45,
    0x1.ca6ed5147bdb7p-45, 0x1.a87deba46baeap-47, 0x1.a9cfa4a5004f4p-45, -0x1.8e27ad3213cb8p-45,
    0x1.16ecdb0f177c8p-46, 0x1.83b54b606bd5cp-46, 0x1.8e436ec90e09dp-47, -0x1.f27ce0967d675p-45,
    -0x1.e20891b0ad8a4p-45, 0x1.ebe708164c759p-45, 0x1.fadedee5d40efp-46, -0x1.a0b2a08a465dcp-47,
};
static const double em_pw_exp2j[128] = {
    0x1.0000000000000p+0, 0x1.0163da9fb3335p+0, 0x1.02c9a3e778061p+0, 0x1.04315e86e7f85p+0,
    0x1.059b0d3158574p+0, 0x1.0706b29ddf6dep+0, 0x1.0874518759bc8p+0, 0x1.09e3ecac6f383p+0,
    0x1.0b5586cf9890fp+0, 0x1.0cc922b7247f7p+0, 0x1.0e3ec32d3d1a2p+0, 0x1.0fb66affed31bp+0,
    0x1.11301d0125b51p+0, 0x1.12abdc06c31ccp+0, 0x1.1429aaea92de0p+0, 0x1.15a98c8a58e51p+0,
    0x1.172b83c7d517bp+0, 0x1.18af9388c8deap+0, 0x1.1a35beb6fcb75p+0, 0x1.1bbe084045cd4p+0,
    0x1.1d4873168b9aap+0, 0x1.1ed5022fcd91dp+0, 0x1.2063b88628cd6p+0, 0x1.21f49917ddc96p+0,
    0x1.2387a6e756238p+0, 0x1.251ce4fb2a63fp+0, 0x1.26b4565e27cddp+0, 0x1.284dfe1f56381p+0,
    0x1.29e9df51fdee1p+0, 0x1.2b87fd0dad990p+0, 0x1.2d285a6e4030bp+0, 0x1.2ecafa93e2f56p+0,
    0x1.306fe0a31b715p+0, 0x1.32170fc4cd831p+0, 0x1.33c08b26416ffp+0, 0x1.356c55f929ff1p+0,
    0x1.371a7373aa9cbp+0, 0x1.38cae6d05d866p+0, 0x1.3a7db34e59ff7p+0, 0x1.3c32dc313a8e5p+0,
    0x1.3dea64c123422p+0, 0x1.3fa4504ac801cp+0, 0x1.4160a21f72e2ap+0, 0x1.431f5d950a897p+0,
    0x1.44e086061892dp+0, 0x1.46a41ed1d0057p+0, 0x1.486a2b5c13cd0p+0, 0x1.4a32af0d7d3dep+0,
    0x1.4bfdad5362a27p+0, 0x1.4dcb299fddd0dp+0, 0x1.4f9b2769d2ca7p+0, 0x1.516daa2cf6642p+0,
    0x1.5342b569d4f82p+0, 0x1.551a4ca5d920fp+0, 0x1.56f4736b527dap+0, 0x1.58d12d497c7fdp+0,
    0x1.5ab07dd485429p+0, 0x1.5c9268a5946b7p+0, 0x1.5e76f15ad2148p+0, 0x1.605e1b976dc09p+0,
    0x1.6247eb03a5585p+0, 0x1.6434634ccc320p+0, 0x1.6623882552225p+0, 0x1.68155d44ca973p+0,
    0x1.6a09e667f3bcdp+0, 0x1.6c012750bdabfp+0, 0x1.6dfb23c651a2fp+0, 0x1.6ff7df9519484p+0,
    0x1.71f75e8ec5f74p+0, 0x1.73f9a48a58174p+0, 0x1.75feb564267c9p+0, 0x1.780694fde5d3fp+0,
    0x1.7a11473eb0187p+0, 0x1.7c1ed0130c132p+0, 0x1.7e2f336cf4e62p+0, 0x1.80427543e1a12p+0,
    0x1.82589994cce13p+0, 0x1.8471a4623c7adp+0, 0x1.868d99b4492edp+0, 0x1.88ac7d98a6699p+0,
    0x1.8ace5422aa0dbp+0, 0x1.8cf3216b5448cp+0, 0x1.8f1ae99157736p+0, 0x1.9145b0b91ffc6p+0,
    0x1.93737b0cdc5e5p+0, 0x1.95a44cbc8520fp+0, 0x1.97d829fde4e50p+0, 0x1.9a0f170ca07bap+0,
    0x1.9c49182a3f090p+0, 0x1.9e86319e32323p+0, 0x1.a0c667b5de565p+0, 0x1.a309bec4a2d33p+0,
    0x1.a5503b23e255dp+0, 0x1.a799e1330b358p+0, 0x1.a9e6b5579fdbfp+0, 0x1.ac36bbfd3f37ap+0,
    0x1.ae89f995ad3adp+0, 0x1.b0e07298db666p+0, 0x1.b33a2b84f15fbp+0, 0x1.b59728de5593ap+0,
    0x1.b7f76f2fb5e47p+0, 0x1.ba5b030a1064ap+0, 0x1.bcc1e904bc1d2p+0, 0x1.bf2c25bd71e09p+0,
    0x1.c199bdd85529cp+0, 0x1.c40ab5fffd07ap+0, 0x1.c67f12e57d14bp+0, 0x1.c8f6d9406e7b5p+0,
    0x1.cb720dcef9069p+0, 0x1.cdf0b555dc3fap+0, 0x1.d072d4a07897cp+0, 0x1.d2f87080d89f2p+0,
    0x1.d5818dcfba487p+0, 0x1.d80e316c98398p+0, 0x1.da9e603db3285p+0, 0x1.dd321f301b460p+0,
    0x1.dfc97337b9b5fp+0, 0x1.e264614f5a129p+0, 0x1.e502ee78b3ff6p+0, 0x1.e7a51fbc74c83p+0,
    0x1.ea4afa2a490dap+0, 0x1.ecf482d8e67f1p+0, 0x1.efa1bee615a27p+0, 0x1.f252b376bba97p+0,
    0x1.f50765b6e4540p+0, 0x1.f7bfdad9cbe14p+0, 0x1.fa7c1819e90d8p+0, 0x1.fd3c22b8f71f1p+0,
};
static const double em_pw_exp2t[128] = {
    0x0.0p+0, 0x1.b3b4f1a88bf6ep-54, -0x1.160139cd8dc5dp-56, -0x1.05e7a108766d1p-54,
    0x1.cd2523567f613p-55, -0x1.bce8023f98efap-55, 0x1.0f74e61e6c861p-57, 0x1.0a3e45b33d399p-54,
    0x1.79aa65d837b6dp-54, 0x1.eb51a92fdeffcp-55, 0x1.ebe3d702f9cd1p-60, -0x1.a033489906e0bp-57,
    -0x1.556522a2fbd0ep-54, -0x1.080ef8c4eea55p-58, -0x1.1c923b9d5f416p-54, 0x1.0d3e3e95c55afp-55,
    -0x1.01b15eaa59348p-55, -0x1.f1ff055de323dp-55, 0x1.b898c3f1353bfp-55, -0x1.6d99c7611eb26p-54,
    0x1.aecf73e3a2f60p-54, -0x1.fe782cb86389dp-55, 0x1.a6f4144a6c38dp-55, 0x1.07a05b0e4047dp-55,
    0x1.68efde3a8a894p-54, 0x1.75e18f274487dp-55, 0x1.0472b981fe7f2p-55, -0x1.6b87b3f71085ep-54,
    0x1.2f7e16d09ab31p-55, -0x1.d219b1a6fbffap-60, 0x1.b3782720c0ab4p-55, 0x1.e149289cecb8fp-57,
    0x1.34d754db0abb6p-55, 0x1.64201e2ac744cp-55, 0x1.fdd395dd3f84ap-55, -0x1.6a3803b8e5b04p-55,
    -0x1.24aedcc4b5068p-54, -0x1.907f81b512d8ep-54, -0x1.1d1e83e9436d2p-56, -0x1.91919b3ce1b15p-54,
    0x1.59f48a72a4c6dp-55, -0x1.312607a28698ap-54, -0x1.8a78f4817895bp-58, -0x1.c2c9b67499a1bp-56,
    0x1.363ed60c2ac11p-59, 0x1.666093b0664efp-54, 0x1.ecce1daa10379p-57, 0x1.3ff8e3f0f1230p-54,
    0x1.690cebb7aafb0p-56, 0x1.31dbdeb54e077p-54, -0x1.f94340071a38ep-55, -0x1.7deccdc93a349p-55,
    -0x1.8dec6bd0f385fp-56, -0x1.61246ec7b5cf6p-55, 0x1.3350518fdd78ep-54, 0x1.b98b72f8a9b05p-56,
    0x1.063e1e21c5409p-54, 0x1.4c7855019c6eap-60, 0x1.432e62b64c035p-54, -0x1.ce44a6199769fp-55,
    -0x1.c33c53bef4da8p-55, -0x1.45378892be9aep-55, -0x1.3cedd78565858p-54, 0x1.710aa807e1964p-58,
    -0x1.3b3efbf5e2228p-54, -0x1.a12ad8734b982p-57, -0x1.367efb86da9eep-57, -0x1.0dc3d54e08851p-55,
    -0x1.81f647e5a3ecfp-56, -0x1.6ee4ac08b7db0p-55, -0x1.619321e55e68ap-55, 0x1.09ccb5e09d4d3p-54,
    -0x1.b32dcb94da51dp-56, 0x1.4ecfd5467c06bp-54, 0x1.5ebe1abd66c55p-57, -0x1.8a1c52fb3cf42p-55,
    -0x1.369b6f13b3734p-54, -0x1.05e843a19ff1ep-55, -0x1.4d450d872576ep-54, 0x1.0ad675b0e8a00p-54,
    0x1.db72fc1f0eab4p-55, -0x1.5b6609cc5e7ffp-57, 0x1.bf68359f35f44p-56, -0x1.3091fa71e3d83p-54,
    -0x1.da9b88b6c1e29p-58, -0x1.c23f97c90b959p-57, -0x1.2434322f4f9aap-54, -0x1.5ca6cd7668e4bp-55,
    0x1.1affc2b91ce27p-56, 0x1.dd235e10a73bbp-57, -0x1.7c50422622263p-55, 0x1.b1c86e3e231d5p-55,
    -0x1.1bbd1d3bcbb15p-54, 0x1.0cc319cee31d2p-54, 0x1.469846e735ab3p-55, -0x1.2dfcd978e9db4p-55,
    0x1.c1a7792cb3387p-55, -0x1.07b8f4ad1d9fap-54, -0x1.5c3d956dcaebap-58, -0x1.0a40e3da6f640p-54,
    -0x1.8d6f438ad9334p-57, -0x1.1eee26b588a35p-54, 0x1.4ffd70a5fddcdp-56, -0x1.1bdfbfa9298acp-54,
    0x1.36eae30af0cb3p-56, 0x1.ee3325c9ffd94p-55, 0x1.4e08fd10959acp-55, 0x1.3cdaf384e1a67p-57,
    0x1.76b2c6c921968p-57, -0x1.08a1883ccb5d2p-55, -0x1.fad5d3ffffa6fp-55, -0x1.00dae3875a949p-54,
    0x1.4a385a63d07a7p-56, -0x1.2919e2040220fp-55, 0x1.e5a50d5c192acp-55, 0x1.43a59ac016b4bp-55,
    -0x1.2d52107b43e1fp-55, -0x1.92ab93b470dc9p-55, 0x1.4b604603a88d3p-56, 0x1.3c5ec519d7271p-55,
    -0x1.ff7128fd391f0p-55, -0x1.dae98e223747dp-55, 0x1.ec3bc41aa2008p-55, 0x1.42b94c3a9eb32p-55,
    0x1.a64a931d185eep-55, -0x1.e37bae43be3edp-55, 0x1.7893b4d91cd9dp-56, 0x1.305c14160cc89p-58,
};

/* log(a + e) = hi + *lo for finite a > 0 (subnormals scaled by 2^52 first, their
   tail ignored) and a tail |e| <= ulp(a) (0 for pow; the zeta loops' exact q + k),
   which joins the reduced argument's low part scaled as a */
static inline __attribute__((always_inline)) double em_pw_log_e(double a, double e, double *lo) {
    int tiny = a < 2.2250738585072014e-308;
    int64_t ix = em_f64_bits(tiny ? a * 0x1p52 : a) - (tiny ? (int64_t)52 << 52 : 0);
    uint64_t tmp = (uint64_t)ix - 0x3fe6955500000000ULL;
    int64_t i = (int64_t)(tmp >> 45) & 127;
    /* k = tmp >> 52 (arithmetic) lies in [-1075, 1024]: k + 1100 is read as a
       double from the bits 2^52 + k + 1100 (AVX2 has no int64 to double) */
    double kd = em_f64_from_bits((int64_t)(0x4330000000000000ULL | ((tmp + (1100ULL << 52)) >> 52)))
                - 4503599627371596.0;
    double z = em_f64_from_bits((int64_t)((uint64_t)ix - (tmp & 0xfff0000000000000ULL)));
    double sc = em_f64_from_bits((int64_t)(0x3ff0000000000000ULL - (tmp & 0xfff0000000000000ULL)));
    double invc = em_pw_invc[i], logc = em_pw_logc[i], logct = em_pw_logct[i];
#if EM_FMA_OK
    double r = fma(z, invc, -1.0);
#else
    /* z invc - 1 is exact in 53 bits: its product in two parts, the high one
       minus 1 exact (Sterbenz), then one exact addition */
    double ph = z * invc;
    double r = (ph - 1.0) + em_prod_err_d(z, invc, ph);
#endif
    double t1 = kd * 0x1.62e42fefa3800p-1 + logc;           /* exact */
    double t2 = t1 + r;
    double lo1 = kd * 0x1.ef35793c76730p-45 + logct + (tiny ? 0.0 : (e * sc) * invc);
    double lo2 = (t1 - t2) + r;
    double ar = -0.5 * r, ar2 = r * ar;
    double hi = t2 + ar2;
    double lo3 = em_prod_err_d(ar, r, ar2);
    double lo4 = (t2 - hi) + ar2;
    double r2 = r * r, r3 = r2 * r;
    double q = EM_MAD(r, -0x1.0000000000010p-2, 0x1.5555555555562p-2)
             + r2 * (EM_MAD(r, -0x1.55555550824bdp-3, 0x1.99999994fc38fp-3)
             + r2 * EM_MAD(r, -0x1.000386a007416p-3, 0x1.2495f8fd5c3e1p-3));
    double l = lo1 + lo2 + lo3 + lo4 + r3 * q;
    double y = hi + l;
    *lo = (hi - y) + l;
    return y;
}

static inline __attribute__((always_inline)) double em_pw_log(double a, double *lo) {
    return em_pw_log_e(a, 0.0, lo);
}

/* exp(b (lh + ll)) for a two-part log lh + ll: 0 / inf past the exponent range */
static inline __attribute__((always_inline)) double em_pw_exp_mul(double b, double lh, double ll) {
    double eh = b * lh, el = EM_MAD(b, ll, em_prod_err_d(b, lh, eh));
    /* past +-746 the result is inf or 0 whatever the tail: clamp (the exponent
       stays in em_ldexp_d's range) */
    int big = !(fabs(eh) < 746.0);
    eh = big ? copysign(746.0, eh) : eh;
    el = big ? 0.0 : el;
    double kd = eh * 0x1.71547652b82fep7 + 0x1.8p52;
    int64_t k = em_f64_bits(kd) - 0x4338000000000000LL;
    kd -= 0x1.8p52;
    double r = (eh + kd * -0x1.62e42fefa0000p-8) + kd * -0x1.cf79abc9e3b3ap-47;
    r += el;
    int64_t j = k & 127;
    double s = em_pw_exp2j[j], t = em_pw_exp2t[j];
    double r2 = r * r;
    double p = EM_MAD(r, 0x1.5555555555487p-3, 0.5)
             + r2 * EM_MAD(r2, 0x1.6c16c7ff34027p-10, EM_MAD(r, 0x1.111115cf79099p-7, 0x1.5555555555455p-5));
    double u = t + r + r2 * p;
    return em_ldexp_d(EM_MAD(s, u, s), k >> 7);
}

/* a^b for a > 0 finite, b finite */
static inline __attribute__((always_inline)) double em_pow_pos_d(double a, double b) {
    double ll, lh = em_pw_log(a, &ll);
    return em_pw_exp_mul(b, lh, ll);
}

/* the loops' expression: b == 2 gives a * a (as torch).  The power is computed
   first and then selected: GCC if-converts no table load under a condition, and
   the loop would not vectorise */
static inline __attribute__((always_inline)) double em_pow_sel_d(double a, double b) {
    double r = em_pow_pos_d(a, b);
    return b == 2.0 ? a * a : r;
}

#endif
