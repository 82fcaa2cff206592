"""placeholder"""
import streamlit as st

st.title("credits")
