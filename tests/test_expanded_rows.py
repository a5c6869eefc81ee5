"""``csv_tables.expanded_rows`` reads back what ``--csv-out`` wrote through the one file door
(:mod:`simpy_astra.infra.files`), a line at a time: a folder without npus.csv, or a file that
is not the table, is one line naming the file, not a traceback or rows of another table."""

from __future__ import annotations

import pytest

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.report import csv_tables

#: a folded run of 4 NPUs: NPUs 0 and 2 simulated, 1 and 3 their orbit members
NODES = ("npu,node_id,name,type,start_ns,end_ns,duration_ns,exposed_comm_ns,exposed_share_ns,bubble_share_ns\n"
         "0,1,gemm,COMP_NODE,0,10,10,0,0,0\n"
         "0,2,ar,COMM_COLL_NODE,10,30,20,20,20,0\n"
         "2,1,gemm,COMP_NODE,0,12,12,0,0,0\n")
NPUS = "npu,simulated_npu\n0,0\n1,0\n2,2\n3,2\n"


def _folder(tmp_path, nodes: str | None = NODES, npus: str | None = NPUS):
    for name, text in (("nodes.csv", nodes), ("npus.csv", npus)):
        if text is not None:
            (tmp_path / name).write_text(text)
    return tmp_path


def test_each_npu_gets_its_simulated_npus_rows(tmp_path) -> None:
    rows = list(csv_tables.expanded_rows(_folder(tmp_path)))
    assert [row[:3] for row in rows] == [["0", "1", "gemm"], ["0", "2", "ar"], ["1", "1", "gemm"],
                                         ["1", "2", "ar"], ["2", "1", "gemm"], ["3", "1", "gemm"]]
    assert rows[3] == ["1", "2", "ar", "COMM_COLL_NODE", "10", "30", "20", "20", "20", "0"]


def test_a_folder_without_npus_csv_is_one_line_naming_it(tmp_path) -> None:
    with pytest.raises(InputError) as err:
        list(csv_tables.expanded_rows(_folder(tmp_path, npus=None)))
    assert "npus.csv" in err.value.message and "\n" not in err.value.message


@pytest.mark.parametrize("name", ["nodes.csv", "npus.csv"])
def test_another_table_in_its_place_is_refused_naming_the_file(tmp_path, name) -> None:
    """layers.csv copied over nodes.csv (or nodes.csv over npus.csv) expanded to rows of nothing
    or of the wrong columns, as if it were the run's."""
    folder = _folder(tmp_path)
    (folder / name).write_text("npu,layer,passes\n0,conv1,1\n")
    with pytest.raises(InputError) as err:
        list(csv_tables.expanded_rows(folder))
    assert err.value.message.startswith(files.show(str(folder / name))) and "header" in err.value.message


def test_an_empty_table_is_refused_naming_it(tmp_path) -> None:
    with pytest.raises(InputError) as err:
        list(csv_tables.expanded_rows(_folder(tmp_path, nodes="")))
    assert "nodes.csv" in err.value.message and "empty" in err.value.message


def test_tables_are_read_under_the_tables_bound_not_a_configs(tmp_path, monkeypatch) -> None:
    """A table is bounded by what a run's tables can be (a folded 1,536-GPU step's nodes.csv is
    gigabytes, past the 256 MiB a configuration file may have), checked when it is opened."""
    assert files.TABLE_LIMIT_BYTES > files.CONFIG_LIMIT_BYTES
    monkeypatch.setattr(files, "TABLE_LIMIT_BYTES", len(NPUS) - 1)
    with pytest.raises(InputError) as err:
        list(csv_tables.expanded_rows(_folder(tmp_path)))
    assert "bytes" in err.value.message


def test_a_row_cut_short_is_refused_naming_its_line(tmp_path) -> None:
    """A table cut short (a disk filled while it was copied) ended on Python's unpacking error."""
    with pytest.raises(InputError) as err:
        list(csv_tables.expanded_rows(_folder(tmp_path, npus=NPUS + "4\n")))
    assert "npus.csv" in err.value.message and "line 6" in err.value.message
