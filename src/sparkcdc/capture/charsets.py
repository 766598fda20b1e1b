"""MySQL/MariaDB collation ids -> charset names -> Python codecs (for CHAR/VARCHAR/TEXT values)."""

from __future__ import annotations

from collections.abc import Callable

# (first id, last id, charset) ranges taken from MariaDB 10.11's information_schema.COLLATIONS, plus MySQL 8's
# utf8mb4_0900 range (255-323).
_RANGES: tuple[tuple[int, int, str], ...] = (
    (1, 1, "big5"), (84, 84, "big5"), (1025, 1025, "big5"), (1108, 1108, "big5"),
    (2, 2, "latin2"), (9, 9, "latin2"), (21, 21, "latin2"), (27, 27, "latin2"), (77, 77, "latin2"),
    (3, 3, "dec8"), (69, 69, "dec8"), (4, 4, "cp850"), (80, 80, "cp850"),
    (5, 5, "latin1"), (8, 8, "latin1"), (15, 15, "latin1"), (31, 31, "latin1"), (47, 49, "latin1"),
    (94, 94, "latin1"), (1032, 1032, "latin1"), (1071, 1071, "latin1"),
    (6, 6, "hp8"), (72, 72, "hp8"), (7, 7, "koi8r"), (74, 74, "koi8r"), (10, 10, "swe7"), (82, 82, "swe7"),
    (11, 11, "ascii"), (65, 65, "ascii"), (1035, 1035, "ascii"), (1089, 1089, "ascii"),
    (12, 12, "ujis"), (91, 91, "ujis"), (13, 13, "sjis"), (88, 88, "sjis"),
    (14, 14, "cp1251"), (23, 23, "cp1251"), (50, 52, "cp1251"), (1074, 1075, "cp1251"),
    (16, 16, "hebrew"), (71, 71, "hebrew"), (18, 18, "tis620"), (89, 89, "tis620"),
    (19, 19, "euckr"), (85, 85, "euckr"), (1043, 1043, "euckr"), (1109, 1109, "euckr"),
    (20, 20, "latin7"), (41, 42, "latin7"), (79, 79, "latin7"), (22, 22, "koi8u"), (75, 75, "koi8u"),
    (24, 24, "gb2312"), (86, 86, "gb2312"), (1048, 1048, "gb2312"), (1110, 1110, "gb2312"),
    (25, 25, "greek"), (70, 70, "greek"),
    (26, 26, "cp1250"), (34, 34, "cp1250"), (44, 44, "cp1250"), (66, 66, "cp1250"), (99, 99, "cp1250"),
    (28, 28, "gbk"), (87, 87, "gbk"), (1052, 1052, "gbk"), (1111, 1111, "gbk"),
    (29, 29, "cp1257"), (58, 59, "cp1257"), (30, 30, "latin5"), (78, 78, "latin5"),
    (32, 32, "armscii8"), (64, 64, "armscii8"),
    (33, 33, "utf8mb3"), (83, 83, "utf8mb3"), (192, 215, "utf8mb3"), (223, 223, "utf8mb3"),
    (576, 578, "utf8mb3"), (1057, 1057, "utf8mb3"), (1107, 1107, "utf8mb3"), (1216, 1216, "utf8mb3"),
    (1238, 1238, "utf8mb3"),
    (35, 35, "ucs2"), (90, 90, "ucs2"), (128, 151, "ucs2"), (159, 159, "ucs2"), (640, 642, "ucs2"),
    (36, 36, "cp866"), (68, 68, "cp866"), (37, 37, "keybcs2"), (73, 73, "keybcs2"),
    (38, 38, "macce"), (43, 43, "macce"), (39, 39, "macroman"), (53, 53, "macroman"),
    (40, 40, "cp852"), (81, 81, "cp852"),
    (45, 46, "utf8mb4"), (224, 247, "utf8mb4"), (255, 323, "utf8mb4"), (608, 610, "utf8mb4"),
    (1069, 1070, "utf8mb4"), (1248, 1248, "utf8mb4"), (1270, 1270, "utf8mb4"),
    (54, 55, "utf16"), (101, 124, "utf16"), (672, 674, "utf16"),
    (56, 56, "utf16le"), (62, 62, "utf16le"), (57, 57, "cp1256"), (67, 67, "cp1256"),
    (60, 61, "utf32"), (160, 183, "utf32"), (736, 738, "utf32"),
    (63, 63, "binary"), (92, 93, "geostd8"), (95, 96, "cp932"), (1119, 1120, "cp932"), (97, 98, "eucjpms"),
)  # fmt: skip

BINARY_COLLATION = 63

_PY_CODEC = {
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",
    "latin1": "cp1252",
    "latin2": "iso8859-2",
    "latin5": "iso8859-9",
    "latin7": "iso8859-13",
    "ascii": "ascii",
    "big5": "big5",
    "gbk": "gbk",
    "gb2312": "gb2312",
    "gb18030": "gb18030",
    "ujis": "euc_jp",
    "eucjpms": "euc_jp",
    "sjis": "shift_jis",
    "cp932": "cp932",
    "euckr": "euc_kr",
    "cp1250": "cp1250",
    "cp1251": "cp1251",
    "cp1256": "cp1256",
    "cp1257": "cp1257",
    "cp850": "cp850",
    "cp852": "cp852",
    "cp866": "cp866",
    "koi8r": "koi8_r",
    "koi8u": "koi8_u",
    "greek": "iso8859-7",
    "hebrew": "iso8859-8",
    "tis620": "tis_620",
    "macroman": "mac_roman",
    "macce": "mac_latin2",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
}


def charset_of_collation(collation_id: int) -> str:
    """Charset name of a collation id; ``utf8mb4`` when the id is unknown (newer servers)."""
    for lo, hi, name in _RANGES:
        if lo <= collation_id <= hi:
            return name
    return "utf8mb4"


def _latin1(data: bytes) -> str:
    # MySQL's latin1 is cp1252 with the 5 bytes cp1252 leaves undefined mapped straight to U+0081 etc.
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return "".join(bytes([b]).decode("cp1252", "strict") if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else chr(b)
                       for b in data)


def text_decoder(charset: str) -> Callable[[bytes], str]:
    """A bytes -> str function for a MySQL charset. Undecodable bytes are replaced only for charsets Python
    lacks a codec for (rare legacy charsets: decoded as latin-1 so no byte is lost)."""
    if charset == "latin1":
        return _latin1
    codec = _PY_CODEC.get(charset)
    if codec is None:
        return lambda b: b.decode("latin-1")
    if codec == "utf-8":
        return lambda b: b.decode("utf-8", "surrogateescape")
    return lambda b: b.decode(codec, "replace")
