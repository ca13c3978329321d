"""Poseidon2 constants for the Goldilocks field, state width t = 12 (data only).

Source: the Poseidon2 paper's reference implementation, repository HorizenLabs/poseidon2 (Rust), file
``plain_implementations/src/poseidon2/poseidon2_instance_goldilocks.rs`` at commit
bb476b9ca38198cf5092487283c8b8c5d4317c4e (the version whose ``RC12`` begins ``0x13dcf33aba214f46`` and whose
``MAT_DIAG12_M_1`` begins ``0xc3b6c08e23ba9300``; the same diagonal is Plonky3's ``MATRIX_DIAG_12_GOLDILOCKS``):

* ``POSEIDON2_GOLDILOCKS_12_PARAMS = Poseidon2Params::new(12, 7, 8, 22, ...)``: width 12, S-box x^7,
  R_F = 8 full rounds (4 before and 4 after the partial rounds), R_P = 22 partial rounds;
* ``MAT_DIAG12_M_1`` -> :data:`INTERNAL_DIAG_M_1`: the internal matrix is all ones plus ``diag(INTERNAL_DIAG_M_1)``,
  so the internal layer is ``x_i <- INTERNAL_DIAG_M_1[i] * x_i + sum(x)``;
* ``RC12`` (30 rows of 12, one per round) -> :data:`EXTERNAL_ROUND_CONSTANTS` (rows 0-3 and 26-29, the full rounds)
  and :data:`INTERNAL_ROUND_CONSTANTS` (entry 0 of rows 4-25, the partial rounds; the other entries of those rows
  are zero in the source);
* the external 4x4 block :data:`M4` is the matrix the reference's ``matmul_external`` computes for t = 4k.

Earlier revisions of the same file carried other constants (and other known answers); see
``tests/test_poseidon2.py`` for the vector these values reproduce.
"""

WIDTH = 12
SBOX_DEGREE = 7
ROUNDS_F = 8  # full rounds, half before and half after the partial rounds
ROUNDS_P = 22  # partial rounds

# Full-round constants, one row of 12 per full round (initial rounds 0-3, then terminal rounds 4-7).
EXTERNAL_ROUND_CONSTANTS: tuple[tuple[int, ...], ...] = (
    (
        0x13DCF33ABA214F46,
        0x30B3B654A1DA6D83,
        0x1FC634ADA6159B56,
        0x937459964DC03466,
        0xEDD2EF2CA7949924,
        0xEDE9AFFDE0E22F68,
        0x8515B9D6BAC9282D,
        0x6B5C07B4E9E900D8,
        0x1EC66368838C8A08,
        0x9042367D80D1FBAB,
        0x400283564A3C3799,
        0x4A00BE0466BCA75E,
    ),
    (
        0x7913BEEE58E3817F,
        0xF545E88532237D90,
        0x22F8CB8736042005,
        0x6F04990E247A2623,
        0xFE22E87BA37C38CD,
        0xD20E32C85FFE2815,
        0x117227674048FE73,
        0x4E9FB7EA98A6B145,
        0xE0866C232B8AF08B,
        0x00BBC77916884964,
        0x7031C0FB990D7116,
        0x240A9E87CF35108F,
    ),
    (
        0x2E6363A5A12244B3,
        0x5E1C3787D1B5011C,
        0x4132660E2A196E8B,
        0x3A013B648D3D4327,
        0xF79839F49888EA43,
        0xFE85658EBAFE1439,
        0xB6889825A14240BD,
        0x578453605541382B,
        0x4508CDA8F6B63CE9,
        0x9C3EF35848684C91,
        0x0812BDE23C87178C,
        0xFE49638F7F722C14,
    ),
    (
        0x8E3F688CE885CBF5,
        0xB8E110ACF746A87D,
        0xB4B2E8973A6DABEF,
        0x9E714C5DA3D462EC,
        0x6438F9033D3D0C15,
        0x24312F7CF1A27199,
        0x23F843BB47ACBF71,
        0x9183F11A34BE9F01,
        0x839062FBB9D45DBF,
        0x24B56E7E6C2E43FA,
        0xE1683DA61C962A72,
        0xA95C63971A19BFA7,
    ),
    (
        0xC68BE7C94882A24D,
        0xAF996D5D5CDAEDD9,
        0x9717F025E7DAF6A5,
        0x6436679E6E7216F4,
        0x8A223D99047AF267,
        0xBB512E35A133BA9A,
        0xFBBF44097671AA03,
        0xF04058EBF6811E61,
        0x5CCA84703FAC7FFB,
        0x9B55C7945DE6469F,
        0x8E05BF09808E934F,
        0x2EA900DE876307D7,
    ),
    (
        0x7748FFF2B38DFB89,
        0x6B99A676DD3B5D81,
        0xAC4BB7C627CF7C13,
        0xADB6EBE5E9E2F5BA,
        0x2D33378CAFA24AE3,
        0x1E5B73807543F8C2,
        0x09208814BFEBB10F,
        0x782E64B6BB5B93DD,
        0xADD5A48EAC90B50F,
        0xADD4C54C736EA4B1,
        0xD58DBB86ED817FD8,
        0x6D5ED1A533F34DDD,
    ),
    (
        0x28686AA3E36B7CB9,
        0x591ABD3476689F36,
        0x047D766678F13875,
        0xA2A11112625F5B49,
        0x21FD10A3F8304958,
        0xF9B40711443B0280,
        0xD2697EB8B2BDE88E,
        0x3493790B51731B3F,
        0x11CAF9DD73764023,
        0x7ACFB8F72878164E,
        0x744EC4DB23CEFC26,
        0x1E00E58F422C6340,
    ),
    (
        0x21DD28D906A62DDA,
        0xF32A46AB5F465B5F,
        0xBFCE13201F3F7E6B,
        0xF30D2E7ADB5304E2,
        0xECDF4EE4ABAD48E9,
        0xF94E82182D395019,
        0x4EE52E3744D887C5,
        0xA1341C7CAC0083B2,
        0x2302FB26C30C834A,
        0xAEA3C587273BF7D3,
        0xF798E24961823EC7,
        0x962DEBA3E9A2CD94,
    ),
)

# Partial-round constants, one per partial round, added to state[0] only.
INTERNAL_ROUND_CONSTANTS: tuple[int, ...] = (
    0x4ADF842AA75D4316,
    0xF8FBB871AA4AB4EB,
    0x68E85B6EB2DD6AEB,
    0x07A0B06B2D270380,
    0xD94E0228BD282DE4,
    0x8BDD91D3250C5278,
    0x209C68B88BBA778F,
    0xB5E18CDAB77F3877,
    0xB296A3E808DA93FA,
    0x8370ECBDA11A327E,
    0x3F9075283775DAD8,
    0xB78095BB23C6AA84,
    0x3F36B9FE72AD4E5F,
    0x69BC96780B10B553,
    0x3F1D341F2EB7B881,
    0x4E939E9815838818,
    0xDA366B3AE2A31604,
    0xBC89DB1E7287D509,
    0x6102F411F9EF5659,
    0x58725C5E7AC1F0AB,
    0x0DF5856C798883E7,
    0xF7BB62A8DA4C961B,
)

# Internal linear layer diagonal minus one: x_i <- INTERNAL_DIAG_M_1[i] * x_i + sum(x).
INTERNAL_DIAG_M_1: tuple[int, ...] = (
    0xC3B6C08E23BA9300,
    0xD84B5DE94A324FB6,
    0x0D0C371C5B35B84F,
    0x7964F570E7188037,
    0x5DAF18BBD996604B,
    0x6743BC47B9595257,
    0x5528B9362C59BB70,
    0xAC45E25B7127B68B,
    0xA2077D7DFBB606B5,
    0xF3FAAC6FAEE378AE,
    0x0C6388B51545E883,
    0xD27DBB6944917B60,
)

# External 4x4 block (rows). For t = 12 the external layer is the block matrix circ(2*M4, M4, M4): M4 on each
# 4-element chunk, then every element gets the sum of the same position across the three chunks added.
M4: tuple[tuple[int, ...], ...] = (
    (5, 7, 1, 3),
    (4, 6, 1, 1),
    (1, 3, 5, 7),
    (1, 1, 4, 6),
)
