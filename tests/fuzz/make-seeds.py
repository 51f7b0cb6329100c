#!/usr/bin/env python3
"""Writes the seed corpora (tests/fuzz/corpus/<harness>/) from the test fixtures and a
few hand-made files, so every seed can be remade and reviewed. Run from the source
tree: python3 tests/fuzz/make-seeds.py (needs gcc and libjpeg's headers for the JPEG
seeds; cairo's, libtiff's, libwebp's and libheif's for the document seeds). Seeds stay small: libFuzzer mutates them, it does not need them big."""
import hashlib
import json
import os
import struct
import subprocess
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
CORPUS = os.path.join(HERE, "corpus")


def put(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def fixture(*parts):
    with open(os.path.join(DATA, *parts), "rb") as f:
        return f.read()


def compact(raw):
    """A fixture's JSON without indentation (seeds stay under libFuzzer's max_len)."""
    return json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False).encode()


# ---------------------------------------------------------------- json
def seeds_json():
    put("json", "object", '{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "d\\u00e9\\n"}}')
    put("json", "nested", "[[[[[[[[{\"k\": []}]]]]]]]]")
    put("json", "comment-sq", "/* c */ {'single': 'quoted', \"hex\": 0x1F}")
    put("json", "fenced-answer", '```json\n{"name": "Ann", "total": "\u20ac3"}\n```')
    put("json", "strings", '["\\"[", "]\\\\", "\\ud83d\\ude00", "\\u0000"]')
    put("json", "number", "  -0.5e-7  ")


# ---------------------------------------------------------------- config
CONFIG_FILES = ["config.json", "generation_config.json", "preprocessor_config.json", "processor_config.json",
                "tokenizer_config.json", "chat_template.jinja"]


def seeds_config():
    for ckpt in ("ckpt-flat", "ckpt-nested"):
        parts = []
        for name in CONFIG_FILES:
            p = os.path.join(DATA, ckpt, name)
            if os.path.exists(p):
                raw = fixture(ckpt, name)
                parts.append(raw if name.endswith(".jinja") else compact(raw))
            else:
                parts.append(None)
        while parts and parts[-1] is None:
            parts.pop()
        # a missing middle file: an empty part would be an empty file, so put "{}" there
        put("config", ckpt, b"\0".join(p if p is not None else b"{}" for p in parts))
    put("config", "config-only", compact(fixture("ckpt-flat", "config.json")))


# ---------------------------------------------------------------- tokenizer.json
def byte_char(b):
    ok = lambda c: 0x21 <= c <= 0x7E or 0xA1 <= c <= 0xAC or 0xAE <= c <= 0xFF
    if ok(b):
        return chr(b)
    return chr(256 + sum(1 for c in range(b) if not ok(c)))


def byte_level(s):
    return "".join(byte_char(b) for b in s.encode())


RELEASE_SPLITS = ["\\p{N}{1,3}", "[一-龥\\u3040-ゟ゠-ヿ]+",
                  "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
                  "| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"]


def tokenizer(merges, added, **model):
    vocab = {byte_char(b): b for b in range(256)}
    pairs = []
    for a, b in merges:
        vocab[byte_level(a) + byte_level(b)] = len(vocab)
        pairs.append([byte_level(a), byte_level(b)])
    toks = []
    for content, special in added:
        toks.append({"id": len(vocab) + len(toks), "content": content, "single_word": False, "lstrip": False,
                     "rstrip": False, "normalized": False, "special": special})
    m = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
         "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
         "vocab": vocab, "merges": pairs}
    m.update(model)
    splits = [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
              for r in RELEASE_SPLITS]
    splits.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False})
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": toks, "normalizer": None,
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": splits}, "post_processor": None,
           "decoder": {"type": "ByteLevel"}, "model": m}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def seeds_tokenizer_load():
    merges = [("h", "e"), ("he", "l"), ("l", "o"), ("1", "2"), ("12", "3"), ("\r", "\n")]
    put("tokenizer-load", "release-like", tokenizer(merges, [("<|s|>", True), ("hell", False)]))
    put("tokenizer-load", "legacy-merges",
        tokenizer(merges, []).replace('["h","e"]', '"h e"').replace('["he","l"]', '"he l"'))
    put("tokenizer-load", "unk-fallback", tokenizer(merges, [("<unk>", True)], unk_token="<unk>", fuse_unk=True,
                                                     byte_fallback=True))


def seeds_tokenizer():
    put("tokenizer", "text", b"\0Hello world 12345, \xe8\xaf\x86\xe5\x88\xab\xe6\x96\x87\xe5\xad\x97\n\n  end")
    put("tokenizer", "text-invalid", b"\2a\xff\xe4\xb8 \xf0\x9f\x98\x80\r\n")
    ids = [9707, 1879, 11, 220, 16, 17, 18, 0, 1, 255, 120000, -5]
    put("tokenizer", "ids", b"\1" + b"".join(struct.pack("<i", i) for i in ids))
    with open(os.path.join(DATA, "ckpt-flat", "tokenizer.json"), encoding="utf-8") as f:
        added = [t["content"] for t in json.load(f)["added_tokens"]][:4]
    put("tokenizer", "special", ("\4" + "x".join(added) + " tail").encode())


# ---------------------------------------------------------------- safetensors
def st_file(tensors, meta=True, pad=True):
    header, data = {}, b""
    if meta:
        header["__metadata__"] = {"format": "pt"}
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    while pad and len(h) % 8:
        h += b" "
    return struct.pack("<Q", len(h)) + h + data


def seeds_safetensors():
    f32 = struct.pack("<4f", 1, -2, 0.5, 1e30)
    put("safetensors", "dtypes", st_file([("a.f32", "F32", [2, 2], f32), ("b.f16", "F16", [2], b"\x00\x3c\x00\xfc"),
                                          ("c.bf16", "BF16", [1, 2], b"\x80\x3f\xc0\x7f"),
                                          ("d.i64", "I64", [1], struct.pack("<q", -7))]))
    put("safetensors", "other-and-empty", st_file([("u", "U8", [3], b"\1\2\3"), ("e", "F32", [0], b""),
                                                   ("s", "F32", [], struct.pack("<f", 3))], meta=False, pad=False))


def seeds_safetensors_index():
    wm = {"vit.a": "model-00001-of-00002.safetensors", "vit.b": "model-00001-of-00002.safetensors",
          "model.c": "model-00002-of-00002.safetensors"}
    put("safetensors-index", "both-shards", json.dumps({"metadata": {"total_size": 32}, "weight_map": wm}))
    put("safetensors-index", "one-shard", json.dumps({"weight_map": {"vit.a": "model-00001-of-00002.safetensors"}}))
    put("safetensors-index", "other-dtype", json.dumps({"weight_map": {"model.u": "model-00002-of-00002.safetensors",
                                                                       "model.c": "model-00002-of-00002.safetensors"}}))


# ---------------------------------------------------------------- PNG
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def adam7(pixels):
    """8-bit gray rows (lists of values) in Adam7 pass order, each row with its filter byte."""
    out = []
    for x0, y0, dx, dy in ADAM7:
        for y in range(y0, len(pixels), dy):
            row = pixels[y][x0::dx]
            if row:
                out.append(bytes(row))
    return out


def png(w, h, depth, color, rows, interlace=0, extra=b"", after=b""):
    raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, interlace))
            + extra + chunk(b"IDAT", zlib.compress(raw)) + after + chunk(b"IEND", b""))


def exif_tiff(orientation):
    return b"MM\0*" + struct.pack(">IH", 8, 1) + struct.pack(">HHIHH", 0x0112, 3, 1, orientation, 0) + b"\0\0\0\0"


def seeds_png():
    put("png", "rgb-3x2", png(3, 2, 8, 2, [bytes(range(9)), bytes(range(9, 18))]))
    pixels = [[(x * 29 + y * 7) % 256 for x in range(9)] for y in range(9)]
    put("png", "gray-interlaced", png(9, 9, 8, 0, adam7(pixels), interlace=1))
    put("png", "gray1", png(9, 2, 1, 0, [b"\xaa\x80", b"\x55\x00"]))
    put("png", "rgba16", png(2, 2, 16, 6, [bytes(range(16)), bytes(range(16, 32))]))
    put("png", "gray-alpha-exif", png(2, 3, 8, 4, [b"\x10\x20\x30\x40"] * 3, extra=chunk(b"eXIf", exif_tiff(6))))
    put("png", "palette-trns", png(4, 1, 2, 3, [b"\x1b"], extra=chunk(b"PLTE", bytes(range(12))) +
                                   chunk(b"tRNS", b"\x00\x80")))
    put("png", "text-chunks", png(1, 1, 8, 0, [b"\x7f"], extra=chunk(b"tEXt", b"k\0v") +
                                  chunk(b"zTXt", b"k\0\0" + zlib.compress(b"hello")) + chunk(b"iCCP", b"p\0\0" +
                                  zlib.compress(b"\0" * 32))))
    put("png", "fixture-tiny", fixture("images", "tiny_40x30.png"))


# ---------------------------------------------------------------- JPEG
JPEG_TOOL = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
/* out w h comps progressive arith restart exif_orientation */
int main(int argc, char **argv) {
    int w = atoi(argv[2]), h = atoi(argv[3]), comps = atoi(argv[4]);
    FILE *f = fopen(argv[1], "wb");
    struct jpeg_compress_struct c; struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e); jpeg_create_compress(&c); jpeg_stdio_dest(&c, f);
    c.image_width = w; c.image_height = h; c.input_components = comps;
    c.in_color_space = comps == 1 ? JCS_GRAYSCALE : comps == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 50, TRUE);
    if (atoi(argv[5])) jpeg_simple_progression(&c);
    c.arith_code = atoi(argv[6]);
    c.restart_interval = atoi(argv[7]);
    jpeg_start_compress(&c, TRUE);
    int o = atoi(argv[8]);
    if (o) {
        unsigned char app1[32] = "Exif\0\0II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0";
        app1[24] = (unsigned char)o;
        jpeg_write_marker(&c, JPEG_APP0 + 1, app1, 32);
    }
    unsigned char *row = malloc((size_t)w * comps);
    while (c.next_scanline < (unsigned)h) {
        for (int i = 0; i < w * comps; i++) row[i] = (unsigned char)(i * 7 + c.next_scanline * 13);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c); jpeg_destroy_compress(&c); fclose(f); free(row);
    return 0;
}
"""


def seeds_jpeg():
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "mk.c"), os.path.join(tmp, "mk")
        with open(src, "w") as f:
            f.write(JPEG_TOOL)
        subprocess.run(["gcc", src, "-o", exe, "-ljpeg"], check=True)
        cases = {"baseline-rgb": (16, 8, 3, 0, 0, 0, 0), "gray-exif6": (8, 16, 1, 0, 0, 0, 6),
                 "progressive": (24, 16, 3, 1, 0, 0, 0), "cmyk": (8, 8, 4, 0, 0, 0, 0),
                 "arith-restart": (16, 16, 3, 0, 1, 1, 3), "progressive-arith": (16, 8, 1, 1, 1, 0, 0)}
        for name, a in cases.items():
            out = os.path.join(tmp, name)
            subprocess.run([exe, out] + [str(x) for x in a], check=True)
            with open(out, "rb") as f:
                put("jpeg", name, f.read())


# ---------------------------------------------------------------- documents
DOC_TOOL = r"""
#include <cairo-pdf.h>
#include <libheif/heif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include <webp/encode.h>
static unsigned char px(int x, int y, int c) { return (unsigned char)(x * 17 + y * 29 + c * 80); }
static void pdf(const char *out, int pages, int image) {
    cairo_surface_t *s = cairo_pdf_surface_create(out, 90, 60);
    cairo_t *cr = cairo_create(s);
    for (int p = 0; p < pages; p++) {
        cairo_rectangle(cr, 10 + 5 * p, 10, 30, 12); cairo_fill(cr);
        cairo_select_font_face(cr, "DejaVu Sans", 0, 0); cairo_set_font_size(cr, 9);
        cairo_move_to(cr, 10, 40); cairo_show_text(cr, "Ab 1");
        if (image) {
            cairo_surface_t *im = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 8, 8);
            cairo_set_source_surface(cr, im, 60, 30); cairo_paint(cr); cairo_surface_destroy(im);
        }
        cairo_show_page(cr);
    }
    cairo_destroy(cr); cairo_surface_destroy(s);
}
/* pages of w x h: spp, bits, photometric, compression, orientation each */
static void tiff(const char *out, int n, const int (*spec)[5]) {
    TIFF *t = TIFFOpen(out, "w");
    for (int p = 0; p < n; p++) {
        int w = 12, h = 8, spp = spec[p][0], bits = spec[p][1];
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w); TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp); TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC, spec[p][2]); TIFFSetField(t, TIFFTAG_COMPRESSION, spec[p][3]);
        TIFFSetField(t, TIFFTAG_ORIENTATION, spec[p][4]); TIFFSetField(t, TIFFTAG_PLANARCONFIG, 1);
        TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 4);
        if (spec[p][2] == PHOTOMETRIC_SEPARATED) TIFFSetField(t, TIFFTAG_INKSET, INKSET_CMYK);
        unsigned char row[12 * 4 * 2];
        for (int y = 0; y < h; y++) {
            for (int i = 0; i < (int)sizeof row; i++) row[i] = px(i, y, p);
            TIFFWriteScanline(t, row, (unsigned)y, 0);
        }
        TIFFWriteDirectory(t);
    }
    TIFFClose(t);
}
static void webp(const char *out, int lossless, int alpha) {
    unsigned char rgba[16 * 12 * 4]; uint8_t *data = NULL; size_t n;
    for (int i = 0; i < 16 * 12 * 4; i++) rgba[i] = (i % 4 == 3) ? (unsigned char)(i * 3) : px(i / 4 % 16, i / 64, i % 4);
    n = lossless ? WebPEncodeLosslessRGBA(rgba, 16, 12, 64, &data) : alpha ? WebPEncodeRGBA(rgba, 16, 12, 64, 50, &data)
                                                                            : WebPEncodeRGB(rgba, 16, 12, 48, 50, &data);
    FILE *f = fopen(out, "wb"); fwrite(data, 1, n, f); fclose(f); WebPFree(data);
}
static void heif(const char *out, int av1, int orientation) {
    struct heif_context *ctx = heif_context_alloc(); struct heif_encoder *enc; struct heif_image *img;
    if (heif_context_get_encoder_for_format(ctx, av1 ? heif_compression_AV1 : heif_compression_HEVC, &enc).code) exit(1);
    heif_encoder_set_lossy_quality(enc, 30);
    if (av1) { heif_encoder_set_parameter(enc, "chroma", "420"); heif_encoder_set_parameter(enc, "speed", "9"); }
    heif_image_create(16, 16, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &img);
    heif_image_add_plane(img, heif_channel_interleaved, 16, 16, 8);
    int stride; uint8_t *p = heif_image_get_plane(img, heif_channel_interleaved, &stride);
    for (int y = 0; y < 16; y++) for (int x = 0; x < 48; x++) p[y * stride + x] = px(x, y, 0);
    struct heif_encoding_options *o = heif_encoding_options_alloc(); o->image_orientation = orientation;
    heif_context_encode_image(ctx, img, enc, o, NULL); heif_context_write_to_file(ctx, out);
}
int main(int argc, char **argv) {
    const char *kind = argv[1], *out = argv[2];
    if (!strcmp(kind, "pdf")) pdf(out, atoi(argv[3]), atoi(argv[4]));
    if (!strcmp(kind, "tiff-mixed")) {
        static const int spec[4][5] = { { 3, 8, PHOTOMETRIC_RGB, COMPRESSION_LZW, 1 },
                                        { 1, 1, PHOTOMETRIC_MINISWHITE, COMPRESSION_CCITTFAX4, 1 },
                                        { 4, 8, PHOTOMETRIC_SEPARATED, COMPRESSION_PACKBITS, 6 },
                                        { 3, 16, PHOTOMETRIC_RGB, COMPRESSION_ADOBE_DEFLATE, 8 } };
        tiff(out, 4, spec);
    }
    if (!strcmp(kind, "tiff-gray")) {
        static const int spec[1][5] = { { 1, 8, PHOTOMETRIC_MINISBLACK, COMPRESSION_NONE, 5 } };
        tiff(out, 1, spec);
    }
    if (!strcmp(kind, "webp")) webp(out, atoi(argv[3]), atoi(argv[4]));
    if (!strcmp(kind, "heif")) heif(out, atoi(argv[3]), atoi(argv[4]));
    return 0;
}
"""


def seeds_documents():
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "mk.c"), os.path.join(tmp, "mk")
        with open(src, "w") as f:
            f.write(DOC_TOOL)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "cairo", "libtiff-4", "libwebp", "libheif"],
                               check=True, capture_output=True, text=True).stdout.split()
        subprocess.run(["gcc", src, "-o", exe] + flags, check=True)
        cases = [("pdf", "two-pages", ["pdf", "2", "0"]), ("pdf", "text-image", ["pdf", "1", "1"]),
                 ("tiff", "fax-cmyk-16bit-turned", ["tiff-mixed"]), ("tiff", "gray-transposed", ["tiff-gray"]),
                 ("webp", "lossy", ["webp", "0", "0"]), ("webp", "lossy-alpha", ["webp", "0", "1"]),
                 ("webp", "lossless-alpha", ["webp", "1", "1"]), ("heif", "heic", ["heif", "0", "1"]),
                 ("heif", "heic-turned", ["heif", "0", "6"]), ("heif", "avif", ["heif", "1", "1"])]
        for harness, name, args in cases:
            out = os.path.join(tmp, name)
            subprocess.run([exe, args[0], out] + args[1:], check=True)
            with open(out, "rb") as f:
                put(harness, name, f.read())
    # PDF by hand: a cross-reference table poppler reads without repairing, an inline
    # image, a rotated page
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
            None,
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 40 30] /Rotate 90 /Contents 3 0 R >>"]
    content = b"q 20 0 0 10 5 5 cm BI /W 2 /H 1 /CS /G /BPC 8 ID \x00\xff EI Q"
    objs[2] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content)
    pdf, offs = bytearray(b"%PDF-1.4\n"), []
    for i, o in enumerate(objs):
        offs.append(len(pdf))
        pdf += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
    x = len(pdf)
    pdf += b"xref\n0 5\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offs)
    pdf += b"trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % x
    put("pdf", "rotated-inline-image", bytes(pdf))


# ---------------------------------------------------------------- answers
def seeds_postprocess():
    put("postprocess", "repeated-tail", "Invoice 2024\n" + "| a | b |\n" * 260)
    put("postprocess", "repeated-cjk", "识别结果：" + "重复的文字" * 450)
    put("postprocess", "plain", "no repetition here, just text \u00e9\u4e2d")
    put("postprocess", "spaces", " \t\u3000" * 800 + "x")


def seeds_spotting():
    put("spotting", "lines", "Hello world(12,34),(560,78)\nTotal (USD)(100, 200), (300, 250)\nno box\n"
                             "two(1,2),(3,4)items(5,6),(7,8)\nunfinished(10,20),(30,4")
    put("spotting", "cjk", "发票号码(120,44),(380,90)\n金额：￥1,234(500,600),(900,650)")


# ---------------------------------------------------------------- Hub
def seeds_hub():
    sha = hashlib.sha256(b"x").hexdigest()
    sib = [{"rfilename": n, "size": 10, "blobId": "a" * 40} for n in
           ("config.json", "tokenizer.json", "generation_config.json", "README.md")]
    sib.append({"rfilename": "model.safetensors", "size": 2000, "blobId": "b" * 40,
                "lfs": {"sha256": sha, "size": 2000, "pointerSize": 134}})
    rev = json.dumps({"sha": "c" * 40, "siblings": sib})
    tree = json.dumps([{"type": "file", "path": "config.json", "size": 5, "oid": "d" * 40},
                       {"type": "file", "path": "tokenizer.json", "size": 7, "oid": "d" * 40},
                       {"type": "directory", "path": "v1.0", "oid": "e" * 40},
                       {"type": "file", "path": "model.safetensors.index.json", "size": 3, "oid": "e" * 40},
                       {"type": "file", "path": "model-00001-of-00002.safetensors", "size": 9,
                        "oid": "f" * 40, "lfs": {"oid": sha, "size": 9, "pointerSize": 134}}])
    state = json.dumps({"files": [{"name": "config.json", "size": 10, "git_oid": "a" * 40, "verified": True}]})
    manifest = json.dumps({"repo": "tencent/HunyuanOCR", "commit": "c" * 40, "subfolder": "", "version": "1.5",
                           "files": [{"name": "config.json", "size": 10, "git_oid": "a" * 40, "mtime": 1}]})
    put("hub", "revision-with-lfs", rev)
    put("hub", "tree-fallback", json.dumps({"sha": "c" * 40, "siblings": []}) + "\0" + tree)
    put("hub", "resumed-installed", rev + "\0\0" + state + "\0" + manifest)


if __name__ == "__main__":
    for fn in (seeds_json, seeds_config, seeds_tokenizer_load, seeds_tokenizer, seeds_safetensors,
               seeds_safetensors_index, seeds_png, seeds_jpeg, seeds_documents, seeds_postprocess, seeds_spotting,
               seeds_hub):
        fn()
