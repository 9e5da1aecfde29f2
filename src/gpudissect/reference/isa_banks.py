"""Published register-bank, reuse-cache and encoding-layout facts, transcribed from the seed papers.

* ``"002"`` Jia et al., *Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking*:
  §3.5 (register banks: Volta 2 banks of 64 bits, bank = register index mod 2, a conflict only when
  all three FFMA sources sit in one bank; "the 4-bank, 32-bit wide design on previous
  architectures", i.e. Maxwell and Pascal), §1 (one instruction reads at most 64 bits of each bank
  per clock), §2.1 (the control section: 21 bits below 2 zero MSBs, widths 4|6|3|3|1|4 for
  reuse | wait mask | read barrier | write barrier | yield | stall, 4 reuse caches / operand slots,
  6 dependency barriers), §2 intro (>= 91 instruction bits, >= 23 control bits, 14 unused) and
  §2.3 (opcodes of 10 to 13 bits in the low bits, a 4-bit predicate field).

Jia et al.'s Turing report (arXiv 1903.07486) is not among the seed texts; its abstract says Turing
keeps Volta's encoding. No Turing register-bank value is transcribed, because its text is not here.
Values are as printed; ``note`` says where a number is read from prose rather than a table.
"""

from __future__ import annotations

from .memory import Published

PUBLISHED: tuple[Published, ...] = (
    Published(
        "isa.regbank.banks",
        "V100",
        2,
        "banks",
        "002",
        "§3.5 (text)",
        "64-bit wide banks; bank = register index mod 2; an FFMA conflicts only when all three sources "
        "sit in one bank (a bank delivers 64 bits, two values, per clock)",
    ),
    Published("isa.regbank.bank_width_bits", "V100", 64, "bits", "002", "§3.5 (text)"),
    Published(
        "isa.regbank.reads_per_bank_per_clk",
        "V100",
        2,
        "values/clk",
        "002",
        "§1 (text)",
        "'can read at most two values from each bank per clock' (64 bits of each bank per clock)",
    ),
    Published(
        "isa.regbank.banks",
        "Pascal/Maxwell",
        4,
        "banks",
        "002",
        "§3.5 (text)",
        "'the 4-bank, 32-bit wide design on previous architectures'",
    ),
    Published("isa.regbank.bank_width_bits", "Pascal/Maxwell", 32, "bits", "002", "§3.5 (text)"),
    Published(
        "isa.regbank.reuse_caches",
        "V100",
        4,
        "caches",
        "002",
        "§2.1 (text)",
        "one per source operand slot; the flag's LSB is the first slot",
    ),
    Published(
        "isa.control.section_bits",
        "V100",
        21,
        "bits",
        "002",
        "§2.1 (text)",
        "one 21-bit section below 2 zero MSBs of the 128-bit word",
    ),
    Published("isa.control.barriers", "V100", 6, "barriers", "002", "§2.1 (text)"),
    Published("isa.control.stall_bits_width", "V100", 4, "bits", "002", "§2.1 (table)"),
    Published("isa.control.yield_bits_width", "V100", 1, "bits", "002", "§2.1 (table)"),
    Published("isa.control.wbar_bits_width", "V100", 3, "bits", "002", "§2.1 (table)"),
    Published("isa.control.rbar_bits_width", "V100", 3, "bits", "002", "§2.1 (table)"),
    Published("isa.control.wait_bits_width", "V100", 6, "bits", "002", "§2.1 (table)"),
    Published("isa.control.reuse_bits_width", "V100", 4, "bits", "002", "§2.1 (table)"),
    Published("isa.encoding.opcode_bits_min", "V100", 10, "bits", "002", "§2.3 (text)", "'from 10 to 13 bits'"),
    Published("isa.encoding.opcode_bits_max", "V100", 13, "bits", "002", "§2.3 (text)", "'from 10 to 13 bits'"),
    Published(
        "isa.encoding.predicate_bits", "V100", 4, "bits", "002", "§2.3 (text)", "negation flag + 3-bit predicate index"
    ),
    Published(
        "isa.encoding.unused_bits",
        "V100",
        14,
        "bits",
        "002",
        "Chapter 2 intro (text)",
        "'the remaining 14 bits appeared to be unused'; the same text counts >= 23 control bits "
        "while §2.1 draws one 21-bit section",
    ),
)


ISA_BANKS = PUBLISHED  # the name report.compare's source list would use


def published(key: str) -> list[Published]:
    """Every record of one key."""
    return [p for p in PUBLISHED if p.key == key]
