// Tests of tables: the CSV reader (RFC 4180 cases, raw and gzipped, every malformed file rejected
// with the file, line and column), the schema fitted on training rows and the encoding it gives,
// and the stratified hold-out split.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "normnet/error.hpp"
#include "normnet/table.hpp"
#include "normnet/table_schema.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::Contains;
using namespace normnet;
using namespace normnet::data;
using normnet::test::ScratchDir;

namespace {

struct CsvFiles : ScratchDir {
    CsvFiles() : ScratchDir("normnet_test_table_") {}
    std::string write(const std::string& name, const std::string& text) {
        const std::string p = *this / name;
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
    std::string write_gz(const std::string& name, const std::string& text) {
        const std::string p = *this / name;
        gzFile gz = gzopen(p.c_str(), "wb");
        REQUIRE(gz != nullptr);
        REQUIRE(gzwrite(gz, text.data(), unsigned(text.size())) == int(text.size()));
        REQUIRE(gzclose(gz) == Z_OK);
        return p;
    }
};

std::vector<std::string> texts(const Table& t, int64_t column) {
    std::vector<std::string> out;
    for (int64_t r = 0; r < t.rows; ++r) out.push_back(t.cell_text(r, column));
    return out;
}

}  // namespace

TEST_CASE("read_csv reads RFC 4180: quotes, delimiters and newlines in quotes, CRLF, a BOM, blank lines", "[table]") {
    CsvFiles dir;
    const std::string path = dir.write("a.csv",
                                       "\xef\xbb\xbfx,name,y\r\n"
                                       "1.5,\"Smith, J\",a\r\n"
                                       "\r\n"
                                       "-2,\"say \"\"hi\"\"\",b\r\n"
                                       " +3e2 ,\"two\nlines\",a");  // no line end at the end
    const Table t = read_csv(path);
    REQUIRE(t.rows == 3);
    REQUIRE(t.columns.size() == 3);
    CHECK(t.columns[0].name == "x");  // the BOM is not part of the first name
    CHECK(t.columns[0].numeric);
    CHECK(t.columns[0].values == std::vector<float>{1.5f, -2.0f, 300.0f});
    CHECK_FALSE(t.columns[1].numeric);
    CHECK(texts(t, 1) == std::vector<std::string>{"Smith, J", "say \"hi\"", "two\nlines"});
    CHECK(t.columns[2].categories == std::vector<std::string>{"a", "b"});
    CHECK(t.columns[2].codes == std::vector<int32_t>{0, 1, 0});
    CHECK(t.lines == std::vector<int64_t>{2, 4, 5});
}

TEST_CASE("read_csv reads gzipped files, other delimiters, and sorts categories whatever the row order", "[table]") {
    CsvFiles dir;
    const std::string path = dir.write_gz("b.csv.gz", "colour;size\nred;1\nblue;2\ngreen;3\nblue;4\n");
    const Table t = read_csv(path, CsvOptions().delimiter(';'));
    REQUIRE(t.rows == 4);
    CHECK(t.columns[0].categories == std::vector<std::string>{"blue", "green", "red"});
    CHECK(t.columns[0].codes == std::vector<int32_t>{2, 0, 1, 0});
    CHECK(t.columns[1].values == std::vector<float>{1, 2, 3, 4});
    // A text column may hold a few number-like cells: they are categories like the others.
    const Table mixed = read_csv(dir.write("m.csv", "k,v\nsmall,1\n2,2\nlarge,3\n"));
    CHECK_FALSE(mixed.columns[0].numeric);
    CHECK(mixed.columns[0].categories == std::vector<std::string>{"2", "large", "small"});
}

TEST_CASE("read_csv rejects malformed files with the file, the line and the column", "[table]") {
    CsvFiles dir;
    auto fails = [&](const std::string& text, const std::string& message) {
        const std::string path = dir.write("bad.csv", text);
        CHECK_THROWS_WITH(read_csv(path), Contains(path) && Contains(message));
    };
    fails("", "the file is empty");
    fails("\n\n", "the file is empty");
    fails("a,b\n", "no rows after the header");
    fails("a,,c\n1,2,3\n", "line 1: column 2 has no name");
    fails("a,b,a\n1,2,3\n", "the name \"a\" is given to columns 1 and 3");
    fails("a,b\n1,2\n3\n", "line 3: 1 field, but the header has 2");
    fails("a,b\n1,2\n3,4,5\n", "line 3: 3 fields, but the header has 2");
    fails("a,b\n1,2\n3,\n", "line 3, column 2 (\"b\"): empty cell");
    fails("a,b\n1,nan\n", "line 2, column 2 (\"b\"): \"nan\" is not a finite number");
    fails("a,b\n1,-inf\n", "is not a finite number");
    fails("a,b\n1,1e39\n", "1e39 is beyond float32's range");
    fails("a,b\n1,2\n3,4\n5,x7\n", "line 4, column 2 (\"b\"): \"x7\" is not a number (2 of the column's 3 cells");
    fails("a,b\n1,\"open\n2,3\n", "line 2: a quoted field is not closed");
    fails("a,b\n1,\"q\"x\n", "line 2: text after the closing quote");
    fails("a,b\n1,caf\xe9\n", "line 2, column 2 (\"b\"): not UTF-8 text");
    fails("a,\xff\n1,2\n", "line 1: the name of column 2 is not UTF-8 text");
    CHECK_THROWS_WITH(read_csv(dir / "missing.csv"), Contains("cannot open") && Contains("missing.csv"));
    const std::string corrupt = dir.write("c.csv.gz", std::string("\x1f\x8b\x08\x00garbage", 11));
    CHECK_THROWS_WITH(read_csv(corrupt), Contains(corrupt));
}

TEST_CASE("Table finds columns by name or index, and take_rows selects rows", "[table]") {
    CsvFiles dir;
    const Table t = read_csv(dir.write("t.csv", "a,b,3\n1,x,5\n2,y,6\n"));
    CHECK(t.find_column("b") == 1);
    CHECK(t.find_column("0") == 0);
    CHECK(t.find_column("3") == 2);  // a name wins over an index
    CHECK(t.find_column("-1") == 2);
    CHECK_THROWS_WITH(t.find_column("7"), Contains("no column 7: the file has 3 columns"));
    CHECK_THROWS_WITH(t.find_column("c"), Contains("no column named \"c\"; the columns are a, b, 3"));
    const Table r = take_rows(t, {1, 0, 1});
    CHECK(r.rows == 3);
    CHECK(texts(r, 1) == std::vector<std::string>{"y", "x", "y"});
    CHECK(r.columns[0].values == std::vector<float>{2, 1, 2});
    CHECK(r.lines == std::vector<int64_t>{3, 2, 3});
    CHECK_THROWS_WITH(take_rows(t, {2}), Contains("row 2 is out of range for 2 rows"));
}

TEST_CASE("fit_table_schema infers the task and learns standardisation and categories", "[table]") {
    CsvFiles dir;
    const Table t = read_csv(dir.write("s.csv", "x,c,label,value,grade\n"
                                                "1,u,cat,0.5,3\n"
                                                "3,v,dog,1.5,1\n"
                                                "5,u,cat,2.0,3\n"));
    const TableSchema by_text = fit_table_schema(t, "label");
    CHECK(by_text.task == TableTask::classification);
    CHECK(by_text.task_reason == "the target holds text");
    CHECK(by_text.classes == std::vector<std::string>{"cat", "dog"});
    REQUIRE(by_text.features.size() == 4);
    CHECK(by_text.features[0].mean == Approx(3.0));
    CHECK(by_text.features[0].std == Approx(std::sqrt(8.0 / 3.0)));
    CHECK(by_text.features[1].categories == std::vector<std::string>{"u", "v"});
    CHECK(by_text.num_inputs() == 1 + 2 + 1 + 1);
    CHECK(by_text.num_outputs() == 2);

    const TableSchema by_default = fit_table_schema(t);  // the last column: 2 distinct integers
    CHECK(by_default.target == "grade");
    CHECK(by_default.task == TableTask::classification);
    CHECK(by_default.classes == std::vector<std::string>{"1", "3"});

    const TableSchema regression = fit_table_schema(t, "value");
    CHECK(regression.task == TableTask::regression);
    CHECK(regression.target_mean == Approx(4.0 / 3.0));
    CHECK(regression.num_outputs() == 1);
    CHECK(fit_table_schema(t, "grade", TableTask::regression).task == TableTask::regression);
    CHECK_THROWS_WITH(fit_table_schema(t, "label", TableTask::regression), Contains("holds text"));
    CHECK_THROWS_WITH(fit_table_schema(t, "value", TableTask::classification),
                      Contains("cannot be a classification target"));
    const Table one = read_csv(dir.write("o.csv", "x,y\n1,a\n2,a\n"));
    CHECK_THROWS_WITH(fit_table_schema(one), Contains("has 1 class in the training rows"));

    std::string ids = "id,y\n";
    for (int i = 0; i < 1001; ++i) ids += "row" + std::to_string(i) + "," + std::to_string(i % 2) + "\n";
    CHECK_THROWS_WITH(fit_table_schema(read_csv(dir.write("ids.csv", ids))),
                      Contains("column \"id\" holds 1001 distinct texts: too many to one-hot encode"));

    const TableSchema back = TableSchema::from_json(by_text.to_json(), "here");
    CHECK(back.to_json() == by_text.to_json());
    CHECK(TableSchema::from_json(regression.to_json(), "here").target_std == regression.target_std);
    CHECK_THROWS_WITH(TableSchema::from_json("{\"target\": 1}", "ckpt"), Contains("ckpt: not a table schema"));
}

TEST_CASE("encode_table standardises, one-hot encodes, and maps classes by the schema", "[table]") {
    CsvFiles dir;
    const Table train = read_csv(dir.write("tr.csv", "x,c,y\n1,u,no\n3,v,yes\n"));
    const TableSchema s = fit_table_schema(train);
    const EncodedTable e = encode_table(s, train);
    REQUIRE(e.inputs.shape() == Shape{2, 3});
    const float* x = e.inputs.data_ptr<float>();
    CHECK(std::vector<float>(x, x + 6) == std::vector<float>{-1, 1, 0, 1, 0, 1});
    CHECK(e.labels.data_ptr<int64_t>()[1] == 1);

    // Columns in another order, an unseen category (all zeros), no target column (no labels).
    const Table rows = read_csv(dir.write("p.csv", "c,x\nw,5\nv,1\n"));
    const EncodedTable p = encode_table(s, rows);
    const float* px = p.inputs.data_ptr<float>();
    CHECK(std::vector<float>(px, px + 6) == std::vector<float>{3, 0, 0, -1, 0, 1});
    CHECK_FALSE(p.labels.defined());

    const Table unknown = read_csv(dir.write("u.csv", "x,c,y\n1,u,no\n1,u,maybe\n"));
    CHECK_THROWS_WITH(encode_table(s, unknown), Contains("line 3: class \"maybe\" of column \"y\" is not one"));
    const Table missing = read_csv(dir.write("m.csv", "c,y\nu,no\n"));
    CHECK_THROWS_WITH(encode_table(s, missing), Contains("no column \"x\", a feature of the model"));
}

TEST_CASE("holdout_split is seeded, sized by the fraction, and stratified by class", "[table]") {
    std::vector<int64_t> labels;
    for (int i = 0; i < 100; ++i) labels.push_back(i < 80 ? 0 : 1);
    const auto [kept, held] = holdout_split(100, 0.2, 7, labels);
    CHECK(kept.size() == 80);
    CHECK(held.size() == 20);
    int64_t ones = 0;
    for (int64_t i : held) ones += labels[size_t(i)];
    CHECK(ones == 4);  // the class's share: 20% of its 20 rows
    CHECK(holdout_split(100, 0.2, 7, labels) == holdout_split(100, 0.2, 7, labels));
    CHECK(holdout_split(100, 0.2, 8, labels).second != held);
    std::vector<int64_t> all = kept;
    all.insert(all.end(), held.begin(), held.end());
    std::sort(all.begin(), all.end());
    for (int64_t i = 0; i < 100; ++i) CHECK(all[size_t(i)] == i);
    CHECK(holdout_split(10, 0.0, 1).second.empty());
    CHECK(holdout_split(2, 0.01, 1).second.size() == 1);
    CHECK(holdout_split(2, 0.99, 1).first.size() == 1);
    CHECK_THROWS_WITH(holdout_split(10, 1.0, 1), Contains("the fraction must be in [0, 1)"));
}
